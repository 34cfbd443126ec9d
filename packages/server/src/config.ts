import { availableParallelism } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { readFileSync } from 'node:fs'
import {
  AttemptTimeoutsError,
  concurrencyDefault,
  createEventCatalog,
  deriveAttemptTimeouts,
  DELIVERY_RETENTION_DEFAULT_DAYS,
  parseEgressAllowList,
  parseEgressProxy,
  parseMasterKey,
  type AttemptTimeouts,
  type SnoozeBudget,
} from '@hookledger/core'
import { ledgerPublicKeyText, parseGivenLedgerKey, parseTlogPolicy, type TlogPolicy, parseLedgerPublicKey, parseLedgerSigningKey } from '@hookledger/ledger'
import { assertDbSchemaName, DEFAULT_DB_SCHEMA, splitHosts } from '@hookledger/store'

const intIn = (min: number, max: number, def: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return def
      const n = Number(v)
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}, got "${v}"` })
        return z.NEVER
      }
      return n
    })

const checked = <T>(fn: (v: string) => T) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return undefined
      try {
        return fn(v)
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message })
        return z.NEVER
      }
    })

/**
 * Reads and validates the catalog extension file (a JSON array of declarations) at start, so a
 * bad file stops the process with a message naming the entry and field instead of failing later.
 */
/** Reads and parses a tlog-policy file; the error names the file and the line. */
export function loadWitnessPolicyFile(file: string): TlogPolicy {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    return parseTlogPolicy(text)
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`)
  }
}

export function loadCatalogFile(file: string): { file: string; entries: unknown[] } {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    throw new Error(`cannot read ${file}: ${reason}`)
  }
  let entries: unknown
  try {
    entries = JSON.parse(text)
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`)
  }
  try {
    createEventCatalog(entries as unknown[])
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`)
  }
  return { file, entries: entries as unknown[] }
}

/**
 * `<checkout>/.hookledger`, wherever the command is run from: `npm start` in one terminal and
 * `npx hookledger …` in another (from any directory) find the same embedded cluster and key.
 */
/** One URL, or libpq's several hosts (`postgres://u:p@h1:5432,h2:5433/db`: the one that is primary is written to). */
function postgresUrl(v: string): string {
  for (const one of splitHosts(v)) {
    const u = new URL(one)
    if (!/^postgres(ql)?:$/.test(u.protocol)) throw new Error('must be a postgres:// URL')
  }
  return v
}

export const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../../.hookledger', import.meta.url))

/** Every setting, read from the environment and validated once, at start. */
export const configSchema = z.object({
  PORT: intIn(0, 65535, 8787),
  HOST: z.string().default('127.0.0.1'),
  /** `serve --role worker` only: a port for /metrics, /readyz and /healthz (unset: none). */
  HOOKLEDGER_METRICS_PORT: checked((v) => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`must be an integer from 0 to 65535, got "${v}"`)
    return n
  }),
  DATABASE_URL: checked(postgresUrl),
  /** A URL that may migrate and create roles, when DATABASE_URL is the service's own (unprivileged) one. */
  HOOKLEDGER_MIGRATE_URL: checked(postgresUrl),
  /**
   * A streaming replica of DATABASE_URL's primary (its host(s); the service role's credentials and
   * database are used there): history reads (delivery logs, attempts, stats, receipts, exports,
   * verify) go to it, with `x-hookledger-replica-lag-ms`; a caller's read after its own write
   * goes to the primary until the replica has replayed that write.
   */
  HOOKLEDGER_READ_DATABASE_URL: checked(postgresUrl),
  HOOKLEDGER_DB_SCHEMA: z.string().optional().transform((v, ctx) => {
    if (v === undefined || v === '') return DEFAULT_DB_SCHEMA
    try {
      return assertDbSchemaName(v)
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message })
      return z.NEVER
    }
  }),
  /**
   * `on` (the default): a statement a connection repeats is prepared on it (store
   * prepared-statements.ts). `off` behind a pooler that cannot keep named statements.
   */
  HOOKLEDGER_DB_PREPARED_STATEMENTS: z.enum(['on', 'off']).default('on').transform((v) => v === 'on'),
  HOOKLEDGER_DATA_DIR: z.string().default(DEFAULT_DATA_DIR).transform((v) => path.resolve(v)),
  HOOKLEDGER_MASTER_KEY: checked(parseMasterKey),
  HOOKLEDGER_LEDGER_SIGNING_KEY: checked(parseLedgerSigningKey),
  /** The `hlpk_…` key a process that does not seal reports and verifies with, when its data dir has no ledger-signing.pub. */
  // `hlpk_…` or the log's vkey (what `ledger public-key` prints); kept as `hlpk_…`.
  HOOKLEDGER_LEDGER_PUBLIC_KEY: checked((v) => ledgerPublicKeyText(parseGivenLedgerKey(v).publicKey)),
  HOOKLEDGER_CHECKPOINT_INTERVAL_SECONDS: intIn(1, 3600, 1),
  // The log's origin (C2SP checkpoint line 1, the key name of its signatures): schema-less and
  // URL-like, e.g. `webhooks.example.com/log`. Unset: one is generated at the first start and kept.
  HOOKLEDGER_LOG_ORIGIN: z.string().optional().transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined
    const origin = v.trim()
    if (!/^[^\s+]{1,255}$/.test(origin) || /^[a-z][a-z0-9+.-]*:\/\//i.test(origin)) {
      ctx.addIssue({ code: 'custom', message: 'a schema-less, URL-like name without spaces or "+", e.g. webhooks.example.com/log' })
      return z.NEVER
    }
    return origin
  }),
  // Serve the log's checkpoint and tiles at /log/… (public: hashes only).
  HOOKLEDGER_LOG_TILES: z.enum(['on', 'off']).default('on').transform((v) => v === 'on'),
  HOOKLEDGER_SNAPSHOT_INTERVAL_HOURS: intIn(0, 8760, 24),
  HOOKLEDGER_EGRESS_ALLOW: checked(parseEgressAllowList),
  // `http://[user:password@]host:port`: every delivery tunnels through it (CONNECT). Kept parsed,
  // so only its `label` (host:port) is ever printed, never the password.
  HOOKLEDGER_EGRESS_PROXY: checked(parseEgressProxy),
  HOOKLEDGER_CATALOG_FILE: checked(loadCatalogFile),
  // A C2SP tlog-policy file: the witnesses each checkpoint is submitted to (\`witness <name> <vkey> <url>\`)
  // and the quorum /log/checkpoint and receipts must carry.
  HOOKLEDGER_WITNESS_POLICY: checked(loadWitnessPolicyFile),
  HOOKLEDGER_ROTATION_GRACE_HOURS: intIn(0, 24 * 30, 24),
  // Sized from the cores (core concurrencyDefault): 128 on a 2-core machine.
  HOOKLEDGER_CONCURRENCY: intIn(1, 4096, concurrencyDefault(availableParallelism())),
  HOOKLEDGER_RETENTION_DAYS: intIn(1, 3650, 30),
  HOOKLEDGER_DELIVERY_RETENTION_DAYS: intIn(1, 3650, DELIVERY_RETENTION_DEFAULT_DAYS),
  HOOKLEDGER_JOB_TIMEOUT_SECONDS: intIn(1, 600, 15),
  HOOKLEDGER_HTTP_TIMEOUT_SECONDS: intIn(1, 599, 0),
  HOOKLEDGER_MAINTENANCE_INTERVAL_SECONDS: intIn(1, 3600, 5),
  HOOKLEDGER_SNOOZE_BUDGET_COUNT: intIn(0, 10_000, 50),
  HOOKLEDGER_SNOOZE_BUDGET_HOURS: intIn(0, 128, 24),
  HOOKLEDGER_PUBLIC_URL: checked((v) => new URL(v).toString().replace(/\/$/, '')),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
})
export type Config = z.output<typeof configSchema>

/** Thrown with one line per bad setting. */
export class ConfigError extends Error {}

/** Parses the environment; throws a ConfigError naming every bad setting. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const parsed = configSchema.safeParse(env)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`)
    throw new ConfigError(`invalid settings:\n${lines.join('\n')}`)
  }
  try {
    attemptTimeoutsOf(parsed.data)
  } catch (err) {
    if (err instanceof AttemptTimeoutsError) throw new ConfigError(`invalid settings:\n  ${err.setting}: ${err.message}`)
    throw err
  }
  return parsed.data
}

/** How long Retry-After may postpone one delivery's run for free (count and total delay). */
export function snoozeBudgetOf(config: Pick<Config, 'HOOKLEDGER_SNOOZE_BUDGET_COUNT' | 'HOOKLEDGER_SNOOZE_BUDGET_HOURS'>): SnoozeBudget {
  return { maxCount: config.HOOKLEDGER_SNOOZE_BUDGET_COUNT, maxTotalMs: config.HOOKLEDGER_SNOOZE_BUDGET_HOURS * 3_600_000 }
}

/** HTTP timeout < job timeout < lease, from the settings (validated at start by loadConfig). */
export function attemptTimeoutsOf(config: Pick<Config, 'HOOKLEDGER_JOB_TIMEOUT_SECONDS' | 'HOOKLEDGER_HTTP_TIMEOUT_SECONDS'>): AttemptTimeouts {
  return deriveAttemptTimeouts({
    jobTimeoutMs: config.HOOKLEDGER_JOB_TIMEOUT_SECONDS * 1000,
    httpTimeoutMs: config.HOOKLEDGER_HTTP_TIMEOUT_SECONDS > 0 ? config.HOOKLEDGER_HTTP_TIMEOUT_SECONDS * 1000 : undefined,
  })
}
