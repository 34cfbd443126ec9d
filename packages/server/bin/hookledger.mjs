#!/usr/bin/env node
// The `hookledger` command: runs the compiled JavaScript (`npm install` builds it; `npm run build` rebuilds).
import { existsSync } from 'node:fs'

const entry = new URL('../dist/main.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('hookledger: not built yet: run `npm run build` (or `npm install`) in the repository\n')
  process.exit(1)
}
const { main } = await import(entry.href)
try {
  process.exitCode = await main(process.argv.slice(2))
} catch (err) {
  process.stderr.write(`hookledger: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
