import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Config } from './config.js'
import type { CliIo } from '@hookledger/cli'
import { processIo } from './cli-io.js'
import { startupErrorLine } from './startup-error.js'

// Each command imports what it needs when it runs: `--help` and the small commands must not pay
// for loading the API, the dispatcher and the MCP SDK.

const USAGE = `usage: hookledger <command>

  serve [--role api|worker|all] [--port N]   API + dispatcher (default: all)
  migrate                                     create the roles, apply migrations as the owner, grant (prints what it did)
  db grant                                    create the database roles and re-apply their grants (prints what it did)
  db standby --from URL --data-dir D [--name N] [--port P]
                                              a streaming standby of the primary at URL (on this machine), started
  database-url [--role publisher|service|reader]
                                              a role's URL (credentials included); publisher: for an app that publishes
  listen [--port 9000] [--secret whsec_…] [--status 204] [--count N] [--json]
                                              a local receiver that checks each request's signature and prints it
  token create --owner O --scopes admin,publish [--label L] [--json | --quiet]
  token create --scopes operator [--label L] [--json]   a token for /api/operator/* (no owner)
  token list [--owner O] [--json]
  token revoke <token id>
  ledger replay [--verify] [--full] [--json]  rebuild projections from the latest snapshot and diff
  ledger snapshot [--json]                    fold the projections into a snapshot a checkpoint signs
  ledger archive --before SEQ [--out F] [--json]
                                              archive the checkpoints before SEQ to a file, drop their partitions
  ledger audit [--delivery ID|--endpoint ID|--event ID] [--limit N] [--json]
  ledger audit --file F --delivery ID|--endpoint ID|--event ID   a history from an export or archive
  ledger checkpoint [--json]                  seal now: extend the hash chain, sign a checkpoint
  ledger verify [--full] [--chain-only] [--public-key K] [--since NOTE] [--json]
                                              chain + checkpoints + the log's tree + replay from the
                                              latest snapshot (--full: every row left; --since: a saved
                                              checkpoint the tree must extend); exit 0 intact, 1 tampered
  ledger verify --policy F                    also: the served checkpoint carries the tlog-policy's
                                              witness quorum, and the tree extends it
  ledger verify --file F --public-key K       verify an export or an archive offline
  ledger verify --receipt F --public-key K    verify a receipt offline: receipt.json, a .tlog-proof or a
                                              directory of them (K: the vkey or hlpk_ key); exit 3 when
                                              some rows are not sealed yet
  ledger receipt --delivery ID --out DIR      a delivery's rows as <leaf index>.tlog-proof files + receipt.json
  ledger export [--from P] [--to Q]           sealed history as JSON lines (verifiable with the public key)
  ledger public-key [--json]                  the log's verifier key (vkey: <origin>+<key id>+<key>)
  ledger rotate-key [--json]                  a new signing key, handed over to by the current one
  op <name> [--owner O] [--json '{…}']        run a declared operation
  mcp --owner O [--scopes admin,publish]      the operations as MCP tools over stdio
  witness key --key-file F [--name N] [--json]
                                              a new witness key (0600, never overwritten); prints its vkey
  witness serve --key-file F --log VKEY[,VKEY…] [--port 7380] [--host 127.0.0.1] [--state-file S]
                                              a C2SP tlog witness: cosigns those logs' checkpoints once
                                              consistent with the last it cosigned (docs/witness.md)

Settings come from the environment: PORT, HOST, DATABASE_URL, HOOKLEDGER_DATA_DIR,
HOOKLEDGER_MASTER_KEY, HOOKLEDGER_EGRESS_ALLOW, HOOKLEDGER_CATALOG_FILE, LOG_LEVEL, …
(docs/settings.md lists them all).`

type OpenDb = Awaited<ReturnType<typeof import('./service.js').openDatabase>>

/** Runs a command that needs only the database, then closes it. */
async function withDatabase(config: Config, fn: (db: OpenDb) => Promise<number>, options: { onRoleAction?: (line: string) => void } = {}): Promise<number> {
  const { createLogger, openDatabase } = await import('./service.js')
  const log = createLogger({ LOG_LEVEL: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL }, process.stderr)
  const database = await openDatabase(config, log, 2, options)
  try {
    return await fn(database)
  } finally {
    await database.close()
  }
}

async function tokenCommand(io: CliIo, config: Config, sub: string | undefined, rest: string[]): Promise<number | null> {
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { owner: { type: 'string' }, scopes: { type: 'string' }, label: { type: 'string' }, json: { type: 'boolean' }, quiet: { type: 'boolean' } },
  })
  const cli = await import('@hookledger/cli')
  if (sub === 'create') return withDatabase(config, ({ db, clock }) => cli.tokenCreateCommand(db, io, { ...values, now: clock.now() }))
  if (sub === 'list') return withDatabase(config, ({ db }) => cli.tokenListCommand(db, io, values))
  if (sub === 'revoke') return withDatabase(config, ({ db, clock }) => cli.tokenRevokeCommand(db, io, { id: positionals[0], now: clock.now() }))
  return null
}

async function ledgerCommand(io: CliIo, config: Config, sub: string | undefined, rest: string[]): Promise<number | null> {
  const { values } = parseArgs({
    args: rest,
    options: {
      verify: { type: 'boolean' },
      json: { type: 'boolean' },
      delivery: { type: 'string' },
      endpoint: { type: 'string' },
      event: { type: 'string' },
      limit: { type: 'string' },
      'chain-only': { type: 'boolean' },
      file: { type: 'string' },
      receipt: { type: 'string' },
      'public-key': { type: 'string' },
      since: { type: 'string' },
      policy: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      full: { type: 'boolean' },
      before: { type: 'string' },
      out: { type: 'string' },
    },
  })
  const cli = await import('@hookledger/cli')
  // Only the commands that sign read the secret key, checked against the ledger (ledger-keys.ts).
  const { ownLedgerPublicKey, sealingLedgerKey, createLedgerKeys } = await import('./ledger-keys.js')
  switch (sub) {
    case 'replay':
      return withDatabase(config, ({ db }) => cli.ledgerReplayCommand(db, io, values))
    case 'audit':
      // From an export or archive file: no database.
      if (values.file !== undefined) return cli.ledgerAuditFileCommand(io, { ...values, file: values.file })
      return withDatabase(config, ({ db }) => cli.ledgerAuditCommand(db, io, values))
    case 'checkpoint':
      return withDatabase(config, async ({ db, clock }) => cli.ledgerCheckpointCommand(db, io, { key: await sealingLedgerKey(config, db), now: clock.now(), json: values.json }))
    case 'snapshot':
      return withDatabase(config, async ({ db, clock }) => cli.ledgerSnapshotCommand(db, io, { key: await sealingLedgerKey(config, db), handOvers: await keyHandOvers(config), now: () => clock.now(), json: values.json }))
    case 'archive':
      return withDatabase(config, async ({ db, clock }) => cli.ledgerArchiveCommand(db, io, { key: await sealingLedgerKey(config, db), handOvers: await keyHandOvers(config), now: () => clock.now(), ...values }))
    case 'rotate-key': {
      const { rotateLedgerSigningKey } = await import('./ledger-key-rotate.js')
      return withDatabase(config, async ({ db, clock }) => cli.ledgerRotateKeyCommand(io, { rotated: await rotateLedgerSigningKey(config, db, clock), json: values.json }))
    }
    case 'public-key': {
      // This data dir's key, never a new one; the log's origin from the setting, else from the database.
      const publicKey = ownLedgerPublicKey(config, { secret: true })?.publicKey
      if (publicKey === undefined || config.HOOKLEDGER_LOG_ORIGIN !== undefined) {
        return cli.ledgerPublicKeyCommand(io, { publicKey, origin: config.HOOKLEDGER_LOG_ORIGIN ?? null, json: values.json })
      }
      const { logOriginStored } = await import('@hookledger/ledger')
      return withDatabase(config, async ({ db }) => cli.ledgerPublicKeyCommand(io, { publicKey, origin: await logOriginStored(db), json: values.json }))
    }
    case 'receipt':
      return withDatabase(config, ({ db, readDb }) => cli.ledgerReceiptCommand(readDb ?? db, io, values))
    case 'export':
      return withDatabase(config, ({ db, readDb }) => cli.ledgerExportCommand(readDb ?? db, io, values))
    case 'verify': {
      // Offline (a file or a receipt) needs no database, and no key of this installation when
      // --public-key names the one to trust.
      // Without --public-key: this data dir's key offline, the one the latest checkpoint names
      // over the database. Either way only a public half is needed, and no key is ever made.
      const offline = values.file !== undefined || values.receipt !== undefined
      if (offline) return cli.ledgerVerifyCommand(null, io, { ...values, defaultPublicKey: values['public-key'] ? undefined : ownLedgerPublicKey(config, { secret: true })?.publicKey })
      return withDatabase(config, async (database) => {
        const defaultPublicKey = values['public-key'] ? undefined : (await createLedgerKeys(config, database.db, { kind: 'on-demand' }).publicKey())?.publicKey
        // HOOKLEDGER_READ_DATABASE_URL: verify reads the replica (it only reads).
        return cli.ledgerVerifyCommand(async () => ({ db: database.readDb ?? database.db, close: async () => {} }), io, { ...values, defaultPublicKey, handOvers: await keyHandOvers(config) })
      })
    }
  }
  return null
}

/** The key hand-overs of this data dir (rotate-key), for verification to follow. */
async function keyHandOvers(config: Config) {
  const { readLedgerKeyRotations } = await import('./ledger-key-rotations-file.js')
  return readLedgerKeyRotations(config).handOvers
}

async function opCommand(io: CliIo, config: Config, name: string | undefined, rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { owner: { type: 'string' }, json: { type: 'string' } } })
  const cli = await import('@hookledger/cli')
  const { createLogger, createOpDeps } = await import('./service.js')
  return withDatabase(config, ({ db, clock }) =>
    // An op that signs loads the key then, checked against the ledger; the others never need it.
    cli.opCommand(createOpDeps(config, db, createLogger({ LOG_LEVEL: 'warn' }, process.stderr), clock, { signingKey: { kind: 'on-demand' } }), io, { name, ...values }),
  )
}

async function run(io: CliIo, env: NodeJS.ProcessEnv, command: string | undefined, argv: string[]): Promise<number | null> {
  const [sub, ...rest] = argv
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      io.out(USAGE)
      return command === undefined ? 2 : 0
    case 'witness':
      // A witness for other logs: its key, state and trusted logs come from flags, no setting is read.
      return (await import('./witness-command.js')).witnessCommand(io, argv)
  }
  let config: Config
  try {
    config = loadConfig(env)
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(err.message)
      return 2
    }
    throw err
  }
  switch (command) {
    case 'serve':
      return (await import('./serve-command.js')).serveCommand(config, argv, env)
    case 'mcp':
      return (await import('./mcp-command.js')).mcpCommand(config, argv)
    case 'migrate':
      return withDatabase(config, async () => (io.out('migrated'), 0), { onRoleAction: (line) => io.out(line) })
    case 'db':
      if (sub === 'standby') return (await import('./database/standby-command.js')).standbyCommand(io, rest)
      if (sub !== 'grant') return null
      // The roles and grants, created or re-applied, each thing done on its own line.
      return withDatabase(config, async () => (io.out('granted'), 0), { onRoleAction: (line) => io.out(line) })
    case 'database-url': {
      // For an application that publishes into hookledger's database (examples/bookings): by
      // default the publisher role's URL, which may call the publish function and nothing else.
      const { values } = parseArgs({ args: argv, options: { role: { type: 'string', default: 'publisher' } } })
      const role = values.role as string
      if (role !== 'service' && role !== 'publisher' && role !== 'reader') {
        io.err(`hookledger database-url: --role must be one of service, publisher, reader (got ${role})`)
        return 2
      }
      return withDatabase(config, async ({ roleUrls }) => (io.out(roleUrls[role]), 0))
    }
    case 'listen':
      return (await import('./listen-command.js')).listenCommand(config, argv, io)
    case 'token':
      return tokenCommand(io, config, sub, rest)
    case 'ledger':
      return ledgerCommand(io, config, sub, rest)
    case 'op':
      return opCommand(io, config, sub, rest)
  }
  return null
}

/**
 * The `hookledger` command. Returns the exit code; a failure is one line on stderr. Tests run
 * the small commands in-process with their own `io` and `env`.
 */
export async function main(argv: string[], options: { io?: CliIo; env?: NodeJS.ProcessEnv } = {}): Promise<number> {
  const io = options.io ?? processIo
  const env = options.env ?? process.env
  const [command, ...rest] = argv
  try {
    const code = await run(io, env, command, rest)
    if (code !== null) return code
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || (err as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      io.err(`hookledger ${command}: ${(err as Error).message}`)
      return 2
    }
    io.err(`hookledger ${command}: ${startupErrorLine(err)}`)
    return 1
  }
  io.err(USAGE)
  return 2
}
