import type { TlogPolicy } from '@hookledger/ledger'
import type { z } from 'zod'
import type { Clock, EgressPolicy, EventCatalog, Logger, SecretBox } from '@hookledger/core'
import type { Db, ReadReplica, TokenPrincipal, TokenScope } from '@hookledger/store'
import type { LedgerKeys } from './ledger-keys.js'

/** Everything an operation may use; built once by the composition root. */
export interface OpDeps {
  readonly db: Db
  readonly clock: Clock
  readonly secretBox: SecretBox
  readonly egressPolicy: EgressPolicy
  readonly catalog: EventCatalog
  readonly logger: Logger
  /** How long a rotated-out secret keeps signing (0 disables). */
  readonly rotationGraceMs: number
  /** The event retention (HOOKLEDGER_RETENTION_DAYS): a recover window reaching past it reports the events pruned there. Absent: the default, 30 days. */
  readonly eventRetentionMs?: number
  /** Base of links to the UI (a delivery row links to its attempts page). */
  readonly publicBaseUrl: string
  /** The ledger's keys: the signing one only where sealing runs, the public halves anywhere. */
  readonly ledgerKeys: LedgerKeys
  /** The log's witness policy (HOOKLEDGER_WITNESS_POLICY): what checkpoint is served and proven against. Absent: none. */
  readonly logPolicy?: TlogPolicy | null
  /** HOOKLEDGER_READ_DATABASE_URL: the replica the read-heavy operations read (the API routes them there). Absent: none. */
  readonly readReplica?: ReadReplica | null
}

/** Who is calling: a token's principal. */
export type Principal = TokenPrincipal

export interface OpContext {
  readonly deps: OpDeps
  readonly principal: Principal
  /** `owner:<token id>` or `operator`, recorded as the ledger actor. */
  readonly actor: string
}

/** An operation's answer and the HTTP status that goes with it. */
export interface OpReply<T> {
  readonly status: 200 | 201 | 202 | 204
  readonly body: T
  /** Where the created resource is read (a 201's `Location`), as an absolute path. */
  readonly location?: string
  /** Response headers besides it (a deprecated event type's `Deprecation`). */
  readonly headers?: Readonly<Record<string, string>>
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** Methods whose input travels as a JSON body; the others read the query string. */
export const hasJsonBody = (method: HttpMethod): boolean =>
  method === 'POST' || method === 'PUT' || method === 'PATCH'

/**
 * One operation, declared once: its name, input and output schemas, required scope and
 * handler. The HTTP routes, the CLI's `op <name>`, the MCP tools and the OpenAPI description
 * are all derived from these declarations.
 */
export interface Operation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  readonly name: string
  readonly summary: string
  readonly scope: TokenScope
  readonly http: { readonly method: HttpMethod; readonly path: string }
  /** Input: path params, query (GET/DELETE) or JSON body (POST/PUT/PATCH), merged into one object. */
  readonly input: I
  readonly output: O
  /** Answer statuses besides errors, for the description. */
  readonly statuses?: readonly number[]
  handler(ctx: OpContext, input: z.output<I>): Promise<OpReply<z.input<O>>>
}

/** Declares an operation with its types inferred. */
export function defineOp<I extends z.ZodType, O extends z.ZodType>(
  op: Operation<I, O>,
): Operation<I, O> {
  return op
}

export const ok = <T>(body: T): OpReply<T> => ({ status: 200, body })
