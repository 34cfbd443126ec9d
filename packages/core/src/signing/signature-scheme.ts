/**
 * Which Standard Webhooks signatures an endpoint's requests carry: `v1` (HMAC-SHA256 with the
 * `whsec_` secret, the default), `v1a` (ed25519 with the endpoint's `whsk_` key, verified with
 * its `whpk_` public key), or both.
 */
export const SIGNATURE_SCHEMES = ['v1', 'v1a', 'v1+v1a'] as const

export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number]

/** The scheme of an endpoint that never chose one (and of every endpoint before v1a existed). */
export const DEFAULT_SIGNATURE_SCHEME: SignatureScheme = 'v1'

/** The scheme's requests carry HMAC (`v1`) signatures. */
export const signsV1 = (scheme: SignatureScheme): boolean => scheme !== 'v1a'

/** The scheme's requests carry ed25519 (`v1a`) signatures, so the endpoint needs a key pair. */
export const signsV1a = (scheme: SignatureScheme): boolean => scheme !== 'v1'
