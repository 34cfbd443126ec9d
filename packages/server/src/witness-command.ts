import path from 'node:path'
import { parseArgs } from 'node:util'
import { serve, type ServerType } from '@hono/node-server'
import type { CliIo } from '@hookledger/cli'
import { systemClock } from '@hookledger/core'
import {
  createWitnessApp,
  createWitnessKeyFile,
  readWitnessKeyFile,
  openWitnessStateFile,
  WitnessKeyFileError,
  witnessKeyInfo,
  witnessKnownLogs,
  WitnessStateError,
  type WitnessEvent,
} from '@hookledger/witness'

/**
 * `hookledger witness key|serve`: a C2SP transparency-log witness (c2sp.org/tlog-witness) for
 * other logs, hookledger's included. It needs no database and no hookledger setting: only its
 * key file, the log keys it trusts, and its state file (docs/witness.md).
 */

/** litewitness's port, the ecosystem's usual one. */
const DEFAULT_PORT = '7380'

/** The state file beside a key file: `w.key` → `w.state.json`. */
export function defaultWitnessStateFile(keyFile: string): string {
  const dir = path.dirname(keyFile)
  const base = path.basename(keyFile).replace(/\.key$/, '')
  return path.join(dir, `${base}.state.json`)
}

export async function witnessCommand(io: CliIo, argv: string[]): Promise<number | null> {
  const [sub, ...rest] = argv
  if (sub === 'key') return witnessKeyCommand(io, rest)
  if (sub === 'serve') return witnessServeCommand(io, rest)
  return null
}

/** `witness key --key-file F [--name N] [--json]`: makes the key (0600, never over another) and prints its vkey. */
async function witnessKeyCommand(io: CliIo, argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'key-file': { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } } })
  const file = values['key-file']
  if (file === undefined || file === '') return (io.err('hookledger witness key: --key-file F is required (where the new key is written, mode 0600)'), 2)
  let made
  try {
    made = await createWitnessKeyFile(file, values.name)
  } catch (error) {
    if (error instanceof WitnessKeyFileError) return (io.err(`hookledger witness key: ${error.message}`), error.code === 'unreadable' ? 1 : 2)
    throw error
  }
  if (values.json) io.out(JSON.stringify({ vkey: made.info.vkey, name: made.info.name, key_id: made.info.keyId }))
  else io.out(made.info.vkey)
  io.err(`wrote ${file} (mode 0600); give the vkey above to the operators of the logs this witness cosigns`)
  return 0
}

/**
 * `witness serve --key-file F --log VKEY[,VKEY…]… [--port 7380] [--host 127.0.0.1] [--state-file S]`:
 * serves add-checkpoint until SIGINT or SIGTERM, then lets the requests in flight finish, releases
 * the state file and exits 0.
 */
async function witnessServeCommand(io: CliIo, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'key-file': { type: 'string' },
      log: { type: 'string', multiple: true },
      port: { type: 'string', default: DEFAULT_PORT },
      host: { type: 'string', default: '127.0.0.1' },
      'state-file': { type: 'string' },
    },
  })
  const fail = (code: number, line: string) => (io.err(`hookledger witness serve: ${line}`), code)
  const keyFile = values['key-file']
  if (keyFile === undefined || keyFile === '') return fail(2, '--key-file F is required (make one with `hookledger witness key --key-file F`)')
  const logs = (values.log ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '')
  if (logs.length === 0) return fail(2, '--log <vkey> is required: the key of each log to cosign (`hookledger ledger public-key` prints hookledger\'s)')
  if (!/^(0|[1-9][0-9]{0,4})$/.test(values.port) || Number(values.port) > 65535) return fail(2, `--port must be 0–65535, got "${values.port}"`)
  const port = Number(values.port)
  const host = values.host
  const stateFile = values['state-file'] ?? defaultWitnessStateFile(keyFile)
  try {
    witnessKnownLogs(logs)
  } catch (error) {
    return fail(2, `--log: ${(error as Error).message}`)
  }

  let key
  try {
    key = await readWitnessKeyFile(keyFile)
  } catch (error) {
    if (error instanceof WitnessKeyFileError) return fail(error.code === 'unreadable' ? 1 : 2, error.message)
    throw error
  }
  let state
  try {
    state = await openWitnessStateFile(stateFile)
  } catch (error) {
    if (error instanceof WitnessStateError) return fail(1, error.message)
    throw error
  }
  const app = createWitnessApp({ key, logs, state, clock: systemClock, onEvent: (event) => io.out(eventLine(event)) })

  // Listen for the signal before binding: a SIGTERM while starting still stops cleanly.
  let stop!: (signal: string) => void
  const stopped = new Promise<string>((resolve) => (stop = resolve))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  const bound = await new Promise<{ server: ServerType; port: number }>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info) => {
      server.off('error', reject)
      server.on('error', () => {})
      resolve({ server, port: info.port })
    })
    server.once('error', reject)
  }).catch((error: NodeJS.ErrnoException) => error)
  if (bound instanceof Error) {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
    await state.close()
    const why = bound.code === 'EADDRINUSE' ? `port ${port} on ${host} is already in use` : bound.code === 'EADDRNOTAVAIL' ? `${host} is not an address of this machine` : `cannot listen on ${host}:${port} (${bound.code ?? bound.message})`
    return fail(1, why)
  }
  const shownHost = host.includes(':') ? `[${host}]` : host
  io.out(`hookledger witness listening on http://${shownHost}:${bound.port} (pid ${process.pid}), vkey ${witnessKeyInfo(key).vkey}, state ${stateFile}`)

  const signal = await stopped
  process.off('SIGINT', stop)
  process.off('SIGTERM', stop)
  // Requests in flight finish (their state written before their answer); idle keep-alives go now,
  // and anything still open after 5 s is cut.
  await new Promise<void>((done) => {
    const force = setTimeout(() => (bound.server as unknown as { closeAllConnections(): void }).closeAllConnections(), 5000)
    bound.server.close(() => (clearTimeout(force), done()))
    ;(bound.server as unknown as { closeIdleConnections(): void }).closeIdleConnections()
  })
  await state.close()
  io.out(`hookledger witness stopped (${signal})`)
  return 0
}

/** One line per add-checkpoint request; a signed but inconsistent checkpoint keeps its body (possible evidence). */
function eventLine(event: WitnessEvent): string {
  const origin = event.origin === null ? '' : ` origin=${JSON.stringify(event.origin)}`
  const size = event.size === null ? '' : ` size=${event.size}`
  const evidence = event.evidence ? ` evidence=${JSON.stringify(event.body ?? '')}` : ''
  return `add-checkpoint ${event.status} ${event.reason}${origin}${size}${evidence}`
}
