import { parseArgs } from 'node:util'
import { loadConfig, type Config } from './config.js'
import { processIo as io } from './cli-io.js'
import { createLogger, startService, type Role } from './service.js'

/** `serve [--role api|worker|all] [--port N]`: runs until SIGTERM/SIGINT, then drains and exits 0. */
export async function serveCommand(config: Config, argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { role: { type: 'string', default: 'all' }, port: { type: 'string' } } })
  const role = values.role as Role
  if (!['api', 'worker', 'all'].includes(role)) {
    io.err('--role must be api, worker or all')
    return 2
  }
  if (values.port !== undefined) config = loadConfig({ ...env, PORT: values.port })
  const log = createLogger(config)
  // Listen for the signal before starting: a SIGTERM during start-up still drains and exits 0.
  // While it waits for the database, a signal aborts the start.
  const stopping = new AbortController()
  const signalled = new Promise<string>((resolve) => {
    const on = (signal: string) => (stopping.abort(), resolve(signal))
    process.once('SIGTERM', on)
    process.once('SIGINT', on)
  })
  const service = await startService(config, { role, log, stopSignal: stopping.signal })
  log.info({ signal: await signalled }, 'draining')
  // A second signal while draining forces the exit — and still stops the embedded PostgreSQL
  // this process started (it outlived a double Ctrl-C before, with nobody left to stop it).
  const force = () => {
    service.abandon()
    process.exit(130)
  }
  process.once('SIGINT', force)
  process.once('SIGTERM', force)
  // Node ends a process whose event loop ran dry with `await service.stop()` unsettled (exit 13):
  // say what the drain was still waiting for rather than end silently.
  const unfinished = (code: number) => {
    if (service.stopping !== null) io.err(`hookledger: exited (code ${code}) while stopping ${service.stopping}`)
  }
  process.once('exit', unfinished)
  await service.stop()
  process.off('exit', unfinished)
  log.info({}, 'stopped')
  return 0
}
