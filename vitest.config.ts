import { defaultServerConditions } from 'vite'
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'
import SlowFirstSequencer from './packages/testkit/src/slow-first-sequencer.js'

// Workspace packages resolve to their TypeScript sources (`source` export condition); the
// compiled `dist/` is what the `hookledger` command runs.
const resolve = { conditions: ['source', ...defaultServerConditions] }

/** One project per tier, named by the file suffix every spec already carries. */
const tier = (name: 'unit' | 'int' | 'e2e' | 'faults' | 'tamper', include: string[], timeoutMs: number): TestProjectInlineConfiguration => ({
  resolve,
  ssr: { resolve },
  test: { name, include, pool: 'forks', testTimeout: timeoutMs, hookTimeout: timeoutMs },
})

export default defineConfig({
  resolve,
  ssr: { resolve },
  test: {
    // One PostgreSQL for the whole run, started by the root project (skipped for unit-only runs).
    globalSetup: ['packages/testkit/src/global-setup.ts'],
    reporters: ['default'],
    // Most e2e and int files wait on processes, sockets and PostgreSQL, not the CPU: three files
    // in flight keep both cores busy (four measured no faster, with more contention).
    maxWorkers: 3,
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      tier('unit', ['packages/*/src/**/*.unit.spec.ts'], 10_000),
      tier('int', ['packages/*/src/**/*.int.spec.ts', 'examples/*/src/**/*.int.spec.ts'], 30_000),
      tier('e2e', ['tests/**/*.e2e.spec.ts'], 60_000),
      // Every attack on history, as each database role (database-roles.ts): refused, or named by verify.
      tier('tamper', ['tests/tamper/**/*.tamper.spec.ts'], 60_000),
      // Each fault file runs its own PostgreSQL and processes; at full scale a drain takes minutes.
      tier('faults', ['tests/faults/**/*.faults.spec.ts'], process.env['FAULTS_SCALE'] === 'full' ? 900_000 : 180_000),
    ],
  },
})
