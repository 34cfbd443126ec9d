/**
 * Pins PostgreSQL and the receiver to cores of their own, so one party's burst does not land in
 * another's figure: with at least 4 cores, PostgreSQL gets half of them, the receiver one, and
 * this process (the service under test, its sealer thread, a `serve` child) the rest. With fewer
 * cores any split would starve one of the three, so nothing is pinned and the run says so; the
 * bench's ratios are then measured within one run on the same shared cores. Linux `taskset`.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'

export interface Pinning {
  readonly pinned: boolean
  readonly detail: string
}

const list = (from: number, to: number) => (from === to ? String(from) : `${from}-${to}`)

/** A process and every thread of it, and (`tree`) its children, to `cpus`. */
function pin(pid: number, cpus: string, tree = false): boolean {
  const pids = [pid]
  if (tree) {
    for (const task of safeRead(`/proc/${pid}/task/${pid}/children`).split(/\s+/).filter(Boolean)) pids.push(Number(task))
  }
  return pids.every((p) => spawnSync('taskset', ['-a', '-p', '-c', cpus, String(p)], { stdio: 'ignore' }).status === 0)
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

export function pinBenchProcesses(postmasterPid: number, receiverPid: number): Pinning {
  const cores = availableParallelism()
  if (process.platform !== 'linux') return { pinned: false, detail: 'not pinned (not Linux)' }
  if (cores < 4) return { pinned: false, detail: `not pinned (${cores} cores: PostgreSQL, the receiver and the service share them)` }
  const pgLast = Math.floor(cores / 2) - 1
  const receiverCore = pgLast + 1
  const postgres = list(0, pgLast)
  const service = list(receiverCore + 1, cores - 1)
  // The postmaster's children already running (checkpointer, walwriter, …) are pinned with it;
  // the backends it forks later inherit its set.
  const ok = pin(postmasterPid, postgres, true) && pin(receiverPid, String(receiverCore)) && pin(process.pid, service)
  return ok
    ? { pinned: true, detail: `pinned: PostgreSQL ${postgres}, receiver ${receiverCore}, service ${service}` }
    : { pinned: false, detail: 'not pinned (taskset failed)' }
}
