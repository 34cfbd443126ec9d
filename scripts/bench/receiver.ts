/**
 * The bench's loopback receiver (scripts/bench-receiver.mjs), run in its own process so it does
 * not share an event loop with the dispatcher, and driven over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { ROOT } from './settings.js'
import { round, wall, withTimeout } from './util.js'

type ReceiverReply = { op: string; ref?: number; [k: string]: unknown }

export class Receiver {
  #child: ChildProcess
  #ref = 0
  #pending = new Map<number, (m: ReceiverReply) => void>()
  port = 0
  pid = 0

  private constructor(child: ChildProcess) {
    this.#child = child
    child.on('message', (m: ReceiverReply) => {
      if (m.ref === undefined) return
      const done = this.#pending.get(m.ref)
      this.#pending.delete(m.ref)
      done?.(m)
    })
  }

  static async start(): Promise<Receiver> {
    const child = fork(path.join(ROOT, 'scripts', 'bench-receiver.mjs'), [], {
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const r = new Receiver(child)
    const ready = await withTimeout(
      new Promise<ReceiverReply>((resolve, reject) => {
        child.once('message', (m: ReceiverReply) => resolve(m))
        child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)))
      }),
      10_000,
      'receiver start',
    )
    r.port = Number(ready['port'])
    r.pid = Number(ready['pid'])
    return r
  }

  url(p = '/'): string {
    return `http://127.0.0.1:${this.port}${p}`
  }

  call(
    op: string,
    extra: Record<string, unknown> = {},
    timeoutMs = 30_000,
  ): Promise<ReceiverReply> {
    const ref = ++this.#ref
    const p = new Promise<ReceiverReply>((resolve) => this.#pending.set(ref, resolve))
    this.#child.send({ op, ref, ...extra })
    return withTimeout(p, timeoutMs, `receiver ${op}`).finally(() => this.#pending.delete(ref))
  }

  async reset(record = false): Promise<void> {
    await this.call('reset')
    await this.call('record', { on: record })
  }

  /** Resolves with the receiver's clock when it has answered `n` requests since the reset. */
  async waitFor(n: number, timeoutMs: number): Promise<number> {
    try {
      return Number((await this.call('waitFor', { n }, timeoutMs))['at'])
    } catch (err) {
      const { count } = await this.call('count')
      throw new Error(`${(err as Error).message} (receiver saw ${String(count)} of ${n})`)
    }
  }

  async dump(): Promise<{ arrivals: [string, string, number][]; count: number }> {
    const m = await this.call('dump', {}, 60_000)
    return { arrivals: m['arrivals'] as [string, string, number][], count: Number(m['count']) }
  }

  /** Offset of the receiver's clock from ours (ms), from the midpoint of an IPC round trip. */
  async clockSkew(): Promise<{ skewMs: number; rttMs: number }> {
    const samples: { skew: number; rtt: number }[] = []
    for (let i = 0; i < 9; i++) {
      const t0 = wall()
      const at = Number((await this.call('clock'))['at'])
      const t1 = wall()
      samples.push({ skew: at - (t0 + t1) / 2, rtt: t1 - t0 })
    }
    samples.sort((a, b) => a.rtt - b.rtt)
    return { skewMs: round(samples[0]!.skew, 2), rttMs: round(samples[0]!.rtt, 2) }
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return
    const exited = new Promise<void>((r) => this.#child.once('exit', () => r()))
    this.#child.send({ op: 'exit' })
    await withTimeout(exited, 5_000, 'receiver exit').catch(() => this.#child.kill())
  }
}
