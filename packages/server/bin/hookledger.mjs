#!/usr/bin/env node
// The `hookledger` command: runs the TypeScript sources through tsx (no build step).
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../src/main.ts')
try {
  process.exitCode = await main(process.argv.slice(2))
} catch (err) {
  process.stderr.write(`hookledger: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
