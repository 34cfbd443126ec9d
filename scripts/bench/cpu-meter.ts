/** Where the CPU went during a measurement: this process, the receiver, PostgreSQL (Linux /proc). */
import { loadavg } from 'node:os'
import { readdirSync, readFileSync } from 'node:fs'
import { round } from './util.js'

/** CPU ms (user + system) of a process and its live children, from /proc (Linux only). */
function procCpuMs(rootPid: number, withChildren: boolean): number {
  const ticks = (stat: string) => {
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]) }
  }
  try {
    let total = ticks(readFileSync(`/proc/${rootPid}/stat`, 'utf8')).cpu
    if (withChildren) {
      for (const name of readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) continue
        try {
          const t = ticks(readFileSync(`/proc/${name}/stat`, 'utf8'))
          if (t.ppid === rootPid) total += t.cpu
        } catch {
          // gone
        }
      }
    }
    return total * 10 // USER_HZ is 100 on Linux
  } catch {
    return NaN
  }
}

/** Where the CPU went between two snapshots: this process, the receiver, PostgreSQL. */
export class CpuMeter {
  #pgPid: number
  #receiverPid: number
  #start = { main: 0, receiver: 0, postgres: 0, wall: 0 }
  constructor(pgPid: number, receiverPid: number) {
    this.#pgPid = pgPid
    this.#receiverPid = receiverPid
  }
  #now() {
    const u = process.cpuUsage()
    return {
      main: (u.user + u.system) / 1000,
      receiver: procCpuMs(this.#receiverPid, false),
      postgres: procCpuMs(this.#pgPid, true),
      wall: performance.now(),
    }
  }
  start(): void {
    this.#start = this.#now()
  }
  /** CPU ms of each part since start(), and the share of the machine's cores they used. */
  stop(): Record<string, number> {
    const end = this.#now()
    const wallMs = end.wall - this.#start.wall
    const main = end.main - this.#start.main
    const receiver = end.receiver - this.#start.receiver
    const postgres = end.postgres - this.#start.postgres
    return {
      main_ms: Math.round(main),
      receiver_ms: Math.round(receiver),
      postgres_ms: Math.round(postgres),
      cores_used: round((main + receiver + postgres) / wallMs, 2),
      machine_load: round(loadavg()[0] ?? NaN, 2),
    }
  }
}
