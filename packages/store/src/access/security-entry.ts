import type { LedgerEntryOf, LedgerPayloads } from '@hookledger/core'

type SecurityKind = 'token.issued' | 'token.revoked' | 'access_code.put' | 'access_code.revoked' | 'embed.put' | 'embed.deleted'

/**
 * A ledger entry for a security-relevant change outside the projections (tokens, access codes,
 * embeds): who did it, when, for which owner. It names no endpoint, delivery or event.
 */
export function securityEntry<K extends SecurityKind>(
  kind: K,
  ctx: { owner_id: string; now: Date; actor?: string | undefined },
  payload: LedgerPayloads[K],
): LedgerEntryOf<K> {
  return {
    kind,
    occurred_at: ctx.now,
    owner_id: ctx.owner_id,
    endpoint_id: null,
    delivery_id: null,
    event_id: null,
    actor: ctx.actor ?? 'system',
    payload,
  } as LedgerEntryOf<K>
}
