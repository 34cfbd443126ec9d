import type { OpErrorCode } from '@hookledger/ops'

/**
 * The one table from a refusal's code to its HTTP status. Operations and the rules in core
 * carry codes only; this adapter decides what each means on the wire (the CLI and MCP decide
 * for themselves). A new code does not compile until it has a row here.
 */
export const PROBLEM_STATUS: Readonly<Record<OpErrorCode, 400 | 403 | 404 | 409 | 413 | 415 | 422 | 429>> = Object.freeze({
  invalid_input: 400,
  invalid_json: 400,
  unsupported_media_type: 415,
  not_found: 404,
  payload_too_large: 413,
  invalid_url: 422,
  unknown_event_type: 422,
  reserved_event_type: 422,
  // data against its type's schema; a deprecated type past its sunset, or subscribed anew.
  event_data_invalid: 422,
  event_type_deprecated: 422,
  // A catalog change that contradicts what is there: declared already, or a built-in's exposure.
  event_type_exists: 409,
  event_type_builtin: 409,
  glob_matches_nothing: 422,
  header_reserved: 422,
  invalid_header: 422,
  invalid_mtls: 422,
  unknown_access_code: 422,
  revoked_access_code: 422,
  egress_blocked: 422,
  endpoint_disabled: 409,
  // A recover of a deleted endpoint (other ops read a deleted endpoint as not found).
  endpoint_deleted: 409,
  access_code_revoked: 409,
  rotation_in_grace: 409,
  event_id_conflict: 409,
  delivery_in_progress: 409,
  delivery_retired: 409,
  event_pruned: 409,
  // A snapshot is not taken over a ledger that does not verify, or before a checkpoint can sign it.
  ledger_not_verified: 409,
  snapshot_unsigned: 409,
  // The process asked does not seal (an API-only one holds no signing key), or knows no public
  // key for the checkpoints: another process can answer, this one cannot.
  signing_key_unavailable: 409,
  ledger_public_key_unavailable: 409,
  // An owner an operator suspended publishes nothing until resumed; over its publish limit it
  // may try again from the problem's retry_at (Retry-After); at max_endpoints it creates none.
  owner_suspended: 403,
  owner_rate_limited: 429,
  endpoint_limit_reached: 409,
})
