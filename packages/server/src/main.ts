import { parseArgs } from 'node:util'
import {
  ledgerAuditCommand,
  ledgerReplayCommand,
  opCommand,
  tokenCreateCommand,
  tokenListCommand,
  tokenRevokeCommand,
  type CliIo,
} from '@hookledger/cli'
import { systemClock } from '@hookledger/core'
import { createMcpServer, parseMcpPrincipal, StdioServerTransport } from '@hookledger/mcp'
import { ConfigError, loadConfig, type Config } from './config.js'
import { createLogger, createOpDeps, openDatabase, startService, type Role } from './service.js'

const USAGE = `usage: hookledger <command>

  serve [--role api|worker|all] [--port N]   API + dispatcher (default: all)
  migrate                                     apply database migrations
  token create --owner O --scopes admin,publish [--label L] [--json]
  token list [--owner O] [--json]
  token revoke <token id>
  ledger replay [--verify] [--json]           rebuild projections from the ledger and diff
  ledger audit [--delivery ID|--endpoint ID|--event ID] [--limit N] [--json]
  op <name> [--owner O] [--json '{…}']        run a declared operation
  mcp --owner O [--scopes admin,publish]      the operations as MCP tools over stdio

Settings come from the environment: PORT, HOST, DATABASE_URL, HOOKLEDGER_DATA_DIR,
HOOKLEDGER_MASTER_KEY, HOOKLEDGER_EGRESS_ALLOW, HOOKLEDGER_CATALOG_FILE, LOG_LEVEL, …`

const io: CliIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
}

/** Runs a command that needs only the database, then closes it. */
async function withDatabase(config: Config, fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<number>) {
  const log = createLogger({ LOG_LEVEL: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL })
  const database = await openDatabase(config, log, 2)
  try {
    return await fn(database)
  } finally {
    await database.close()
  }
}

async function serveCommand(config: Config, argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { role: { type: 'string', default: 'all' }, port: { type: 'string' } } })
  const role = values.role as Role
  if (!['api', 'worker', 'all'].includes(role)) {
    io.err('--role must be api, worker or all')
    return 2
  }
  if (values.port !== undefined) config = loadConfig({ ...process.env, PORT: values.port })
  const log = createLogger(config)
  const service = await startService(config, { role, log })
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      log.info({ signal }, 'draining')
      resolve()
    }
    process.once('SIGTERM', onSignal)
    process.once('SIGINT', onSignal)
  })
  // A second signal while draining forces the exit.
  process.once('SIGINT', () => process.exit(130))
  await service.stop()
  log.info({}, 'stopped')
  return 0
}

/**
 * `mcp --owner O [--scopes admin,publish|operator]`: serves the operations as MCP tools over
 * stdin/stdout until stdin closes (or SIGTERM/SIGINT), then closes the database.
 */
async function mcpCommand(config: Config, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { owner: { type: 'string' }, scopes: { type: 'string' } },
  })
  const parsed = parseMcpPrincipal(values)
  if (!parsed.ok) {
    io.err(parsed.message)
    return 2
  }
  // stdout carries the protocol alone: every log line goes to stderr.
  const level = config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL
  const log = createLogger({ LOG_LEVEL: level }, process.stderr)
  const database = await openDatabase(config, log, 2)
  try {
    const deps = createOpDeps(config, database.db, log)
    const server = createMcpServer({ deps, ...parsed.principal })
    const done = new Promise<void>((resolve) => {
      process.stdin.once('end', resolve)
      process.stdin.once('close', resolve)
      process.once('SIGTERM', resolve)
      process.once('SIGINT', resolve)
    })
    await server.connect(new StdioServerTransport())
    await done
    await server.close()
    return 0
  } finally {
    await database.close()
  }
}

/** The `hookledger` command. Returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv
  let config: Config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(err.message)
      return 2
    }
    throw err
  }
  const now = systemClock.now()
  switch (command) {
    case 'serve':
      return serveCommand(config, [sub, ...rest].filter((a): a is string => a !== undefined))
    case 'migrate':
      return withDatabase(config, async () => (io.out('migrated'), 0))
    case 'token': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { owner: { type: 'string' }, scopes: { type: 'string' }, label: { type: 'string' }, json: { type: 'boolean' } },
      })
      if (sub === 'create') return withDatabase(config, ({ db }) => tokenCreateCommand(db, io, { ...values, now }))
      if (sub === 'list') return withDatabase(config, ({ db }) => tokenListCommand(db, io, values))
      if (sub === 'revoke') return withDatabase(config, ({ db }) => tokenRevokeCommand(db, io, { id: positionals[0], now }))
      break
    }
    case 'ledger': {
      const { values } = parseArgs({
        args: rest,
        options: {
          verify: { type: 'boolean' },
          json: { type: 'boolean' },
          delivery: { type: 'string' },
          endpoint: { type: 'string' },
          event: { type: 'string' },
          limit: { type: 'string' },
        },
      })
      if (sub === 'replay') return withDatabase(config, ({ db }) => ledgerReplayCommand(db, io, values))
      if (sub === 'audit') return withDatabase(config, ({ db }) => ledgerAuditCommand(db, io, values))
      break
    }
    case 'mcp':
      return mcpCommand(config, [sub, ...rest].filter((a): a is string => a !== undefined))
    case 'op': {
      const { values } = parseArgs({ args: rest, options: { owner: { type: 'string' }, json: { type: 'string' } } })
      return withDatabase(config, ({ db }) => {
        const log = createLogger({ LOG_LEVEL: 'warn' })
        return opCommand(createOpDeps(config, db, log), io, { name: sub, ...values })
      })
    }
    case undefined:
    case 'help':
    case '--help':
      io.out(USAGE)
      return command === undefined ? 2 : 0
  }
  io.err(USAGE)
  return 2
}
