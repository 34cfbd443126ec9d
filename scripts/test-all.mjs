#!/usr/bin/env node
// `npm test` after the type-check: every vitest tier, and the quick bench beside it. The bench
// is a smoke test (it fails only when a scenario errors), and the suite leaves a core idle
// much of the time (processes, sockets, timers): running them side by side costs no coverage.
import { spawn } from 'node:child_process'

const run = (name, args) =>
  new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    // The bench's lines are kept until the suite is done, so the two never interleave.
    const held = []
    const out = (stream, target) =>
      stream.on('data', (d) => (name === 'bench' ? held.push([target, d]) : target.write(d)))
    out(child.stdout, process.stdout)
    out(child.stderr, process.stderr)
    child.on('close', (code) => resolve({ name, code: code ?? 1, held }))
  })

const [suite, bench] = await Promise.all([run('suite', ['test:all-tiers']), run('bench', ['bench', '--', '--quick'])])
for (const [target, chunk] of bench.held) target.write(chunk)
for (const r of [suite, bench]) if (r.code !== 0) process.stderr.write(`npm test: ${r.name} failed (exit ${r.code})\n`)
process.exit(suite.code || bench.code)
