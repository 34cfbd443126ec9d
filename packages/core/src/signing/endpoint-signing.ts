import type { EndpointRow } from '../model/projections.js'
import type { SecretBox } from './secret-box.js'
import { signsV1, signsV1a } from './signature-scheme.js'
import { signWebhook, type SignedWebhook } from './webhook-signature.js'

/** The columns that decide how an endpoint's attempt is signed. */
export type EndpointSigningColumns = Pick<
  EndpointRow,
  | 'signature_scheme'
  | 'secret_sealed'
  | 'prev_secret_sealed'
  | 'prev_secret_expires_at'
  | 'v1a_key_sealed'
  | 'prev_v1a_key_sealed'
  | 'prev_v1a_key_expires_at'
>

/** What one attempt signs: the event id, this attempt's time, the exact body. */
export interface AttemptMessage {
  readonly id: string
  readonly timestamp: number
  readonly body: string
}

/** A previous key signs until its grace window ends (strictly before `expires_at`). */
const inGrace = (sealed: Uint8Array | null, expiresAt: Date | null, now: Date): sealed is Uint8Array =>
  sealed !== null && expiresAt !== null && expiresAt.getTime() > now.getTime()

/**
 * Signs one attempt as the endpoint's scheme says: its current HMAC secret (v1) and/or its
 * current ed25519 key (v1a), each joined by the previous one while a rotation's grace window
 * lasts. Keys are unsealed here, through the caller's box (the worker's remembers what it opened:
 * worker/src/remembered-secrets.ts).
 */
export function signEndpointAttempt(
  endpoint: EndpointSigningColumns,
  box: SecretBox,
  message: AttemptMessage,
  now: Date,
): SignedWebhook {
  const secrets: string[] = []
  const v1aSecretKeys: string[] = []
  if (signsV1(endpoint.signature_scheme)) {
    secrets.push(box.open(endpoint.secret_sealed))
    if (inGrace(endpoint.prev_secret_sealed, endpoint.prev_secret_expires_at, now)) {
      secrets.push(box.open(endpoint.prev_secret_sealed))
    }
  }
  if (signsV1a(endpoint.signature_scheme)) {
    if (endpoint.v1a_key_sealed === null) throw new Error('endpoint signs v1a but has no v1a key')
    v1aSecretKeys.push(box.open(endpoint.v1a_key_sealed))
    if (inGrace(endpoint.prev_v1a_key_sealed, endpoint.prev_v1a_key_expires_at, now)) {
      v1aSecretKeys.push(box.open(endpoint.prev_v1a_key_sealed))
    }
  }
  return signWebhook({ ...message, secrets, v1aSecretKeys })
}
