/**
 * Every refusal an operation (or the input checks in front of it) can answer, by its stable
 * code. A code is what the caller acts on; how each projection renders it is that projection's
 * business — the HTTP status lives in one table in `api` (problem-status.ts), the CLI maps codes
 * to exit codes, MCP returns the code.
 */
export const OP_ERROR_CODES = [
  'invalid_input',
  'invalid_json',
  'invalid_url',
  'unsupported_media_type',
  'not_found',
  'payload_too_large',
  'unknown_event_type',
  'reserved_event_type',
  'event_data_invalid',
  'event_type_deprecated',
  'event_type_exists',
  'event_type_builtin',
  'glob_matches_nothing',
  'header_reserved',
  'invalid_header',
  'invalid_mtls',
  'unknown_access_code',
  'revoked_access_code',
  'egress_blocked',
  'endpoint_disabled',
  'endpoint_deleted',
  'access_code_revoked',
  'rotation_in_grace',
  'event_id_conflict',
  'delivery_in_progress',
  'delivery_retired',
  'event_pruned',
  'ledger_not_verified',
  'snapshot_unsigned',
  'signing_key_unavailable',
  'ledger_public_key_unavailable',
  'owner_suspended',
  'owner_rate_limited',
  'endpoint_limit_reached',
] as const
export type OpErrorCode = (typeof OP_ERROR_CODES)[number]

/**
 * The one error type operations throw for an expected refusal: a stable `code`, a message for a
 * person, and the input field at fault. It carries no HTTP status (see problem-status.ts in api).
 */
export class OpError extends Error {
  constructor(
    readonly code: OpErrorCode,
    message: string,
    /** The input field at fault, as a dotted path (`event_types.2`). */
    readonly field?: string,
    /** Where in the input, as a JSON pointer (`/data/order_id`), when a schema placed it. */
    readonly pointer?: string,
    /** A refusal that passes (`owner_rate_limited`): from when the caller may try again. */
    readonly retryAt?: Date,
  ) {
    super(message)
    this.name = 'OpError'
  }
}

export const notFound = (what: string) => new OpError('not_found', `${what} not found`)
