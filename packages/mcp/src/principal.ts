import { OPERATOR_OWNER, type TokenScope } from '@hookledger/store'

const SCOPES: readonly TokenScope[] = ['admin', 'publish', 'operator']

/** Owner ids the CLI accepts: lowercase letters, digits, `_` and `-`, up to 63. */
const OWNER_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/

/** Whom an MCP session acts as: one owner with its scopes, or the operator (no owner). */
export interface McpPrincipal {
  readonly owner_id: string
  readonly scopes: readonly TokenScope[]
}

/**
 * Reads `--owner O [--scopes admin,publish]` with the rules tokens follow: known scopes only,
 * `operator` alone and bound to no owner, otherwise an owner id is required.
 */
export function parseMcpPrincipal(args: {
  owner?: string | undefined
  scopes?: string | undefined
}): { ok: true; principal: McpPrincipal } | { ok: false; message: string } {
  const scopes = (args.scopes ?? 'admin,publish')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const bad = scopes.find((s) => !SCOPES.includes(s as TokenScope))
  if (bad) return { ok: false, message: `unknown scope "${bad}"; use ${SCOPES.join(', ')}` }
  if (scopes.length === 0) return { ok: false, message: `--scopes: use ${SCOPES.join(', ')}` }
  if (scopes.includes('operator')) {
    if (scopes.length > 1)
      return { ok: false, message: 'the "operator" scope goes alone (it binds to no owner)' }
    return { ok: true, principal: { owner_id: OPERATOR_OWNER, scopes: ['operator'] } }
  }
  if (!args.owner || !OWNER_ID.test(args.owner)) {
    return {
      ok: false,
      message: '--owner is required: lowercase letters, digits, "_" and "-" (up to 63)',
    }
  }
  const unique = [...new Set(scopes)] as TokenScope[]
  return { ok: true, principal: { owner_id: args.owner, scopes: unique } }
}
