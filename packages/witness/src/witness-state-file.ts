import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import { link, open, readFile, rename, unlink } from 'node:fs/promises'
import path from 'node:path'
import type { WitnessLogState } from './witness-decision.js'

/**
 * The witness's memory: for each log origin, the latest checkpoint it cosigned, in one JSON file
 *
 *     {"format":"hookledger-witness-state/v1","logs":{"<origin>":{"size":N,"root":"<base64>","checkpoint":"<note>"}}}
 *
 * An update runs under a mutex (one per file, so requests serialize, whatever their origin),
 * re-reads the file inside it, and replaces the file atomically: a temporary file beside it,
 * written, fsynced, renamed over it, the directory fsynced. The caller answers only after the
 * update resolved, so a 200 is never sent for a checkpoint a crash could forget (tlog-witness:
 * "The witness MUST persist the new checkpoint before responding", the old-size check and the
 * write in one atomic step).
 *
 * A `<file>.lock` holding the process id keeps a second witness process off the same file (the
 * mutex only orders one process's requests); a lock whose process is gone is taken over. A file
 * that is unreadable, or missing after it was created, is never taken for an empty state: that
 * would let a log roll its history back. Such an update throws, and nothing is cosigned.
 */

export const WITNESS_STATE_FORMAT = 'hookledger-witness-state/v1'

/** The state as the app sees it: a read for monitors, and the one way to change it. */
export interface WitnessStateStore {
  /** The state of one origin, or null when the witness never cosigned for it. */
  read(origin: string): Promise<WitnessLogState | null>
  /**
   * Runs `decide` with the origin's state read afresh, under the lock; when it returns a
   * `next` state, that state is on disk before the returned promise resolves.
   */
  update<T>(origin: string, decide: (current: WitnessLogState | null) => { readonly next?: WitnessLogState; readonly result: T }): Promise<T>
  close(): Promise<void>
}

/** A state file that cannot be used: unreadable, malformed, gone, or served by another process. */
export class WitnessStateError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'WitnessStateError'
  }
}

/** One promise chain: each task starts when the previous one settled. */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve()
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task)
    this.tail = result.catch(() => undefined)
    return result
  }
}

type LogsState = Map<string, WitnessLogState>

/** The SHA-256 of an origin, lowercase hex: how a monitor names a log (tlog-witness §Monitor Retrieval). */
export function originHash(origin: string): string {
  return createHash('sha256').update(origin, 'utf8').digest('hex')
}

const BASE64_HASH = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/

/** The file's text for `logs`, origins sorted so equal states are equal files. */
export function encodeWitnessState(logs: ReadonlyMap<string, WitnessLogState>): string {
  const entries = [...logs.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  // fromEntries defines own properties: an origin named `__proto__` stays a key, not a prototype.
  const out = Object.fromEntries(
    entries.map(([origin, s]) => [origin, { size: s.size, root: Buffer.from(s.root).toString('base64'), ...(s.checkpoint === undefined ? {} : { checkpoint: s.checkpoint }) }]),
  )
  return JSON.stringify({ format: WITNESS_STATE_FORMAT, logs: out }, null, 2) + '\n'
}

/** Parses the file's text; throws WitnessStateError on anything but the format encodeWitnessState writes. */
export function decodeWitnessState(text: string, file = 'the witness state'): LogsState {
  const fail = (why: string) => new WitnessStateError(`${file}: ${why}`)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw fail('not JSON')
  }
  const top = parsed as { format?: unknown; logs?: unknown }
  if (typeof parsed !== 'object' || parsed === null || top.format !== WITNESS_STATE_FORMAT) throw fail(`not a ${WITNESS_STATE_FORMAT} file`)
  if (typeof top.logs !== 'object' || top.logs === null || Array.isArray(top.logs)) throw fail('"logs" is not an object')
  const logs: LogsState = new Map()
  for (const [origin, entry] of Object.entries(top.logs as Record<string, unknown>)) {
    const e = entry as { size?: unknown; root?: unknown; checkpoint?: unknown }
    if (typeof entry !== 'object' || entry === null) throw fail(`log ${JSON.stringify(origin)} is not an object`)
    if (typeof e.size !== 'number' || !Number.isSafeInteger(e.size) || e.size < 0) throw fail(`log ${JSON.stringify(origin)}: size is not a non-negative safe integer`)
    if (typeof e.root !== 'string' || !BASE64_HASH.test(e.root)) throw fail(`log ${JSON.stringify(origin)}: root is not the base64 of a 32-byte hash`)
    if (e.checkpoint !== undefined && typeof e.checkpoint !== 'string') throw fail(`log ${JSON.stringify(origin)}: checkpoint is not a string`)
    logs.set(origin, { size: e.size, root: new Uint8Array(Buffer.from(e.root, 'base64')), ...(e.checkpoint === undefined ? {} : { checkpoint: e.checkpoint }) })
  }
  return logs
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code

/** Whether process `pid` exists (EPERM: it does, as another user's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return errorCode(error) === 'EPERM'
  }
}

async function fsyncDirectory(dir: string): Promise<void> {
  let handle
  try {
    handle = await open(dir, constants.O_RDONLY)
    await handle.sync()
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    await handle?.close()
  }
}

/** Writes `text` to a fresh file beside `file`, fsynced; returns its name. */
async function writeTemporary(file: string, text: string): Promise<string> {
  const temp = `${file}.tmp-${process.pid}-${Math.random().toString(16).slice(2, 10)}`
  const handle = await open(temp, 'wx', 0o644)
  try {
    await handle.writeFile(text, 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
  return temp
}

/** The locks this process holds: a lock naming our own pid is ours only if it is in here (else a restart reused the pid). */
const held = new Set<string>()

async function takeLock(lock: string): Promise<void> {
  if (held.has(lock)) throw new WitnessStateError(`this process already serves this state file (${lock})`)
  // Reserved before the first await, so two opens in this process cannot both take it.
  held.add(lock)
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      // Linked from a complete file: the lock is never seen without its pid.
      const temp = await writeTemporary(lock, `${process.pid}\n`)
      try {
        await link(temp, lock)
        return
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw new WitnessStateError(`cannot create the lock ${lock} (${errorCode(error) ?? (error as Error).message})`, { cause: error })
      } finally {
        await unlink(temp).catch(() => undefined)
      }
      const pid = Number((await readFile(lock, 'utf8').catch(() => '')).trim())
      // Our own pid (not reserved above: that threw): left by an earlier process that had the same pid.
      if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
        throw new WitnessStateError(`another witness (pid ${pid}) serves this state file: ${lock} exists (remove it only if that process is not a witness)`)
      }
      // Left by a process that is gone: take it over.
      await unlink(lock).catch(() => undefined)
    }
    throw new WitnessStateError(`cannot take the lock ${lock}`)
  } catch (error) {
    held.delete(lock)
    throw error
  }
}

async function releaseLock(lock: string): Promise<void> {
  held.delete(lock)
  await unlink(lock).catch(() => undefined)
}

/**
 * Opens (creating it empty when absent) the state file `file` and locks it for this process.
 * Throws WitnessStateError when it is unreadable or locked by a live process.
 */
export async function openWitnessStateFile(file: string): Promise<WitnessStateStore> {
  const absolute = path.resolve(file)
  const dir = path.dirname(absolute)
  const lock = `${absolute}.lock`
  await takeLock(lock)
  const mutex = new Mutex()
  let closed = false
  try {
    // Created with link(): it fails if the file exists, so a state is never replaced by an empty one.
    const temp = await writeTemporary(absolute, encodeWitnessState(new Map()))
    try {
      await link(temp, absolute)
      await fsyncDirectory(dir)
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw new WitnessStateError(`cannot create the witness state ${absolute} (${errorCode(error) ?? (error as Error).message})`, { cause: error })
    } finally {
      await unlink(temp).catch(() => undefined)
    }
    await load()
  } catch (error) {
    await releaseLock(lock)
    throw error
  }

  async function load(): Promise<LogsState> {
    let text: string
    try {
      text = await readFile(absolute, 'utf8')
    } catch (error) {
      throw new WitnessStateError(
        errorCode(error) === 'ENOENT' ? `the witness state ${absolute} is gone: restore it (an empty one would let a log roll back)` : `cannot read the witness state ${absolute} (${errorCode(error) ?? (error as Error).message})`,
        { cause: error },
      )
    }
    return decodeWitnessState(text, absolute)
  }

  async function save(logs: LogsState): Promise<void> {
    const temp = await writeTemporary(absolute, encodeWitnessState(logs))
    try {
      await rename(temp, absolute)
    } catch (error) {
      await unlink(temp).catch(() => undefined)
      throw new WitnessStateError(`cannot write the witness state ${absolute} (${errorCode(error) ?? (error as Error).message})`, { cause: error })
    }
    await fsyncDirectory(dir)
  }

  const ensureOpen = () => {
    if (closed) throw new WitnessStateError('the witness state is closed')
  }

  return {
    read: (origin) =>
      mutex.run(async () => {
        ensureOpen()
        return (await load()).get(origin) ?? null
      }),
    update: (origin, decide) =>
      mutex.run(async () => {
        ensureOpen()
        const logs = await load()
        const { next, result } = decide(logs.get(origin) ?? null)
        if (next !== undefined) {
          logs.set(origin, next)
          await save(logs)
        }
        return result
      }),
    close: () =>
      mutex.run(async () => {
        if (closed) return
        closed = true
        await releaseLock(lock)
      }),
  }
}
