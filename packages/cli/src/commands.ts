import type { OpDeps } from '@hookledger/ops'
import { OpError, findOperation, OPERATIONS, parseOpInput } from '@hookledger/ops'
import {
  apiTokenCreate,
  apiTokenList,
  apiTokenRevoke,
  OPERATOR_OWNER,
  type Db,
  type TokenScope,
} from '@hookledger/store'
import {
  ledgerReplayVerify,
  ReplayStartError,
  type ReplayReport,
  type ReplaySnapshot,
  ledgerTrail,
  type ReplayProgress,
} from '@hookledger/ledger'

/** Where a command writes; tests capture it. */
export interface CliIo {
  out(line: string): void
  err(line: string): void
}

const SCOPES: readonly TokenScope[] = ['admin', 'publish', 'operator']

/** A delivery, endpoint or token id as the CLI accepts it. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Owner ids the CLI accepts: lowercase letters, digits, `_` and `-`, up to 63. */
const OWNER_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/

/** `token create --owner O --scopes admin,publish [--label L] [--json | --quiet]`, or `--scopes operator` (no owner). `--quiet` prints the token alone (for `TOKEN=$(…)`). */
export async function tokenCreateCommand(
  db: Db,
  io: CliIo,
  args: {
    owner?: string | undefined
    scopes?: string | undefined
    label?: string | undefined
    json?: boolean | undefined
    quiet?: boolean | undefined
    now: Date
  },
): Promise<number> {
  const scopes = (args.scopes ?? 'admin,publish')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const bad = scopes.find((s) => !SCOPES.includes(s as TokenScope))
  if (bad) {
    io.err(`unknown scope "${bad}"; use ${SCOPES.join(', ')}`)
    return 2
  }
  const operator = scopes.includes('operator')
  if (operator && scopes.length > 1) {
    io.err('an operator token carries only the "operator" scope')
    return 2
  }
  if (operator && args.owner !== undefined) {
    io.err('an operator token is bound to no owner: drop --owner')
    return 2
  }
  const owner = operator ? OPERATOR_OWNER : args.owner
  if (!operator && (!owner || !OWNER_ID.test(owner))) {
    io.err('--owner is required: lowercase letters, digits, "_" and "-" (up to 63)')
    return 2
  }
  const { id, token } = await apiTokenCreate(db, {
    owner_id: owner!,
    scopes: scopes as TokenScope[],
    label: args.label ?? '',
    now: args.now,
    actor: 'operator',
  })
  if (args.quiet) io.out(token)
  else if (args.json) io.out(JSON.stringify({ token, id, owner_id: operator ? null : owner, scopes }))
  else io.out(`token ${id} for ${operator ? 'the operator' : owner} (${scopes.join(', ')}), shown once:\n${token}`)
  return 0
}

export async function tokenListCommand(
  db: Db,
  io: CliIo,
  args: { owner?: string | undefined; json?: boolean | undefined },
) {
  const rows = await apiTokenList(db, args.owner ? { owner_id: args.owner } : {})
  if (args.json) io.out(JSON.stringify(rows))
  else
    for (const r of rows)
      io.out(
        `${r.id}  ${r.owner_id}  ${r.scopes.join(',')}  ${r.revoked_at ? 'revoked' : 'live'}  ${r.label}`,
      )
  return 0
}

export async function tokenRevokeCommand(
  db: Db,
  io: CliIo,
  args: { id?: string | undefined; now: Date },
) {
  if (!args.id || !UUID.test(args.id)) {
    io.err(
      args.id
        ? `${JSON.stringify(args.id)} is not a token id (a UUID, as \`hookledger token list\` shows)\nusage: hookledger token revoke <token id>`
        : 'a token id is needed (`hookledger token list` shows them)\nusage: hookledger token revoke <token id>',
    )
    return 2
  }
  const done = await apiTokenRevoke(db, { id: args.id, now: args.now, actor: 'operator' })
  io.out(done ? `revoked ${args.id}` : `no live token ${args.id}`)
  return done ? 0 : 1
}

/** 1234567 → "1,234,567". */
const grouped = (n: number) => Math.round(n).toLocaleString('en-US')

/** Seconds → "45 s", "3 min 20 s", "2 h 05 min". */
function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`
}

/** How long a replay runs quietly before it reports progress, and how often it does then. */
const PROGRESS_AFTER_MS = 2_000
const PROGRESS_EVERY_MS = 2_000

/** One progress line of a long replay: entries folded, rate, and (from the planner's estimate) time left. */
export function replayProgressLine(p: ReplayProgress): string {
  const rate = p.ms > 0 ? p.rows / (p.ms / 1000) : 0
  const of = p.estimatedRows !== null ? ` of ~${grouped(Math.max(p.estimatedRows, p.rows))}` : ''
  const left =
    p.estimatedRows === null || rate <= 0
      ? ''
      : p.rows < p.estimatedRows
        ? `, ~${duration((p.estimatedRows - p.rows) / rate)} left`
        : ', finishing'
  return `ledger replay: ${p.phase}, ${grouped(p.rows)}${of} ledger entries folded, ${grouped(p.entities)} rows compared (${grouped(rate)} entries/s)${left}`
}

/**
 * `ledger replay --verify`: rebuilds the projections from the ledger, checks every row's
 * history, and diffs them with the live ones. Exit 0 with "no differences", or 1 naming the
 * differing rows (up to 1,000; the total is always given). A replay that runs longer than ~2 s
 * reports its progress on stderr (stdout stays the report, `--json` included).
 */
export async function ledgerReplayCommand(db: Db, io: CliIo, args: { json?: boolean | undefined; full?: boolean | undefined }) {
  let lastLine = 0
  let report: ReplayReport
  try {
    report = await ledgerReplayVerify(db, {
      from: args.full ? 'genesis' : 'snapshot',
      onProgress: (p) => {
        if (p.ms < PROGRESS_AFTER_MS || p.ms - lastLine < PROGRESS_EVERY_MS) return
        lastLine = p.ms
        io.err(replayProgressLine(p))
      },
    })
  } catch (err) {
    if (!(err instanceof ReplayStartError)) throw err
    io.err(`${err.message} (run without --full)`)
    return 2
  }
  const snapshotBad = report.snapshot !== null && !report.snapshot.digestMatches
  if (args.json) {
    io.out(JSON.stringify(report))
  } else {
    const from = report.snapshot
      ? ` from snapshot ${report.snapshot.seq} (position ${report.snapshot.beforePosition}, signed by checkpoint ${report.snapshot.checkpoint})`
      : ''
    io.out(
      `replayed ${report.ledgerRows} ledger rows${from} into ${report.endpoints} endpoints, ${report.deliveries} deliveries, ${report.attempts} attempts in ${report.ms} ms`,
    )
    if (snapshotBad) io.out(snapshotTamperedLine(report.snapshot!))
    if (report.differencesTotal === 0) io.out('no differences')
    for (const d of report.differences) {
      if (d.kind === 'inconsistent') {
        io.out(`DIFF ${d.table} ${d.key}: inconsistent${d.position !== undefined ? ` at position ${d.position}` : ''}: ${d.problem}`)
        continue
      }
      io.out(
        `DIFF ${d.table} ${d.key}: ${d.kind}${d.columns.length ? ` (${d.columns.map((c) => `${c}: live=${JSON.stringify(d.live?.[c])} replayed=${JSON.stringify(d.replayed?.[c])}`).join('; ')})` : ''}`,
      )
    }
    if (report.differencesOmitted > 0) io.out(`… and ${report.differencesOmitted} more differences`)
    if (report.differencesTotal > 0) {
      const counts = (['endpoints', 'deliveries', 'endpoint_queue', 'events', 'api_tokens', 'access_codes', 'embeds', 'event_types', 'owners'] as const).flatMap((t) =>
        Object.entries(report.differenceCounts[t])
          .filter(([, n]) => n > 0)
          .map(([k, n]) => `${t} ${k} ${n}`),
      )
      io.out(`${report.differencesTotal} differences (${counts.join(', ')})`)
    }
  }
  return report.differencesTotal === 0 && !snapshotBad ? 0 : 1
}

/** The line naming a snapshot whose rows no longer hash to the digest its checkpoint signed. */
export function snapshotTamperedLine(s: ReplaySnapshot): string {
  return `TAMPERED snapshot_altered: snapshot ${s.seq}'s rows (${s.endpoints} endpoints, ${s.deliveries} deliveries) do not hash to the digest checkpoint ${s.checkpoint} signed`
}

/** `ledger audit [--delivery ID | --endpoint ID | --event ID] [--limit N]`: the entries, in order. */
export async function ledgerAuditCommand(
  db: Db,
  io: CliIo,
  args: {
    delivery?: string | undefined
    endpoint?: string | undefined
    event?: string | undefined
    limit?: string | undefined
    json?: boolean | undefined
  },
) {
  // Delivery and endpoint ids are UUIDs: anything else is the caller's mistake, said as such
  // (it reached PostgreSQL as a raw 22P02 before).
  for (const [flag, value] of [['--delivery', args.delivery], ['--endpoint', args.endpoint]] as const) {
    if (value !== undefined && !UUID.test(value)) {
      io.err(`${flag} ${JSON.stringify(value)} is not a ${flag.slice(2)} id (a UUID, e.g. 0f8c5a5e-6d0b-4b8e-9f47-1f2d3c4b5a69)`)
      return 2
    }
  }
  if (args.limit !== undefined && !/^[1-9][0-9]{0,5}$/.test(args.limit)) {
    io.err(`--limit ${JSON.stringify(args.limit)} is not a number of entries (1–100000)`)
    return 2
  }
  const limit = Math.min(Number(args.limit ?? 1000) || 1000, 100_000)
  const { data: rows } = await ledgerTrail(
    db,
    { delivery_id: args.delivery, endpoint_id: args.endpoint, event_id: args.event },
    limit,
  )
  for (const r of rows) {
    if (args.json) io.out(JSON.stringify(r))
    else
      io.out(
        `${r.position}  ${r.occurred_at.toISOString()}  ${r.kind.padEnd(26)} ${r.actor.padEnd(24)} ${r.delivery_id ?? r.endpoint_id ?? r.event_id ?? ''}  ${JSON.stringify(r.payload)}`,
      )
  }
  return 0
}

/**
 * `op <name> --owner O --json '{…}'`: runs a declared operation as the owner, with the same
 * validation and handler as the HTTP route. Prints the answer as JSON.
 */
export async function opCommand(
  deps: OpDeps,
  io: CliIo,
  args: { name?: string | undefined; owner?: string | undefined; json?: string | undefined },
) {
  const op = args.name ? findOperation(args.name) : undefined
  if (!op) {
    io.err(`unknown op "${args.name ?? ''}"; known: ${OPERATIONS.map((o) => o.name).join(', ')}`)
    return 2
  }
  let raw: unknown = {}
  try {
    raw = args.json ? JSON.parse(args.json) : {}
  } catch {
    io.err('--json is not valid JSON')
    return 2
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    io.err('--json must be a JSON object')
    return 2
  }
  const operator = op.scope === 'operator'
  const owner = operator ? OPERATOR_OWNER : (args.owner ?? 'default')
  if (!operator && !OWNER_ID.test(owner)) {
    io.err('--owner: lowercase letters, digits, "_" and "-" (up to 63)')
    return 2
  }
  try {
    // The same validation as the HTTP route: one declaration, one set of rules.
    const input = parseOpInput(op, raw)
    const reply = await op.handler(
      {
        deps,
        principal: { id: 'cli', owner_id: owner, scopes: [op.scope] },
        actor: operator ? 'operator' : `owner:cli`,
      },
      input,
    )
    io.out(JSON.stringify(reply.body ?? null, null, 2))
    return 0
  } catch (err) {
    if (err instanceof OpError) {
      io.err(`${err.code}: ${err.message}${err.field ? ` (field ${err.field})` : ''}`)
      return err.code === 'invalid_input' ? 2 : 1
    }
    throw err
  }
}
