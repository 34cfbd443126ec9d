import { z } from 'zod'
import {
  MAX_MTLS_PEM_BYTES,
  base64ToBytes,
  bytesToBase64,
  certificateSubject,
  checkEndpointMtls,
  checkEndpointUrl,
  type EgressPolicy,
  type EndpointMtls,
  type EndpointOauth2,
  type EndpointRow,
  type SecretBox,
} from '@hookledger/core'
import { OpError } from './op-error.js'

/**
 * How an endpoint authenticates itself to its receiver, as `webhooks.create` and
 * `webhooks.update` accept it: a client certificate (`mtls`) and/or OAuth2 client credentials
 * (`oauth2`). The private key and the client secret are sealed with the master key here and
 * never shown again; on update, leaving either out keeps the one held (the client secret only
 * while token_url stays the same).
 */

const pem = z.string().min(1).max(MAX_MTLS_PEM_BYTES * 2)

export const endpointMtlsInput = z
  .strictObject({
    certificate: pem.describe('The client certificate, PEM (a chain may follow the leaf)'),
    private_key: pem.optional().describe("The certificate's private key, PEM, unencrypted; sealed at rest, never shown. Required on create; on update leaving it out keeps the one held"),
    ca: pem.nullable().optional().describe("PEM of the authority the receiver's certificate must chain to; absent: the system's"),
  })
  .nullable()
  .describe('mTLS: a client certificate presented on connect (null removes it)')

export const endpointOauth2Input = z
  .strictObject({
    token_url: z.string().min(1).max(2048).describe('Where the token is fetched (POST, grant_type=client_credentials, client_secret_basic); egress-guarded like the endpoint'),
    client_id: z.string().min(1).max(512),
    client_secret: z.string().min(1).max(4096).optional().describe('Sealed at rest, never shown. Required on create, and on an update that changes token_url; otherwise on update leaving it out keeps the one held'),
    scope: z.string().min(1).max(1024).nullable().optional(),
    audience: z.string().min(1).max(1024).nullable().optional(),
  })
  .nullable()
  .describe('OAuth2 client credentials: a bearer token sent as authorization (null removes it)')

export const endpointMtlsOutput = z
  .object({
    certificate: z.string().describe('The client certificate (PEM, public)'),
    fingerprint: z.string().describe('SHA-256 fingerprint of the client certificate'),
    subject: z.string().nullable(),
    not_after: z.string(),
    ca: z.string().nullable().describe('The pinned CA (PEM), or null: the system authorities'),
  })
  .nullable()
  .describe('The client certificate as shown: never its private key')

export const endpointOauth2Output = z
  .object({
    token_url: z.string(),
    client_id: z.string(),
    scope: z.string().nullable(),
    audience: z.string().nullable(),
  })
  .nullable()
  .describe('OAuth2 client credentials as shown: never the client secret')

export type EndpointMtlsRequest = z.output<typeof endpointMtlsInput>
export type EndpointOauth2Request = z.output<typeof endpointOauth2Input>

const refuse = (field: string, message: string) => new OpError('invalid_mtls', `${field}: ${message}`, field)

/**
 * Checks `input` (core's rule, on the injected clock) and seals its key. On update `current` is
 * the endpoint as locked: without `private_key` its sealed key is kept, checked against the new
 * certificate too.
 */
export function sealEndpointMtls(
  box: SecretBox,
  input: EndpointMtlsRequest,
  current: Pick<EndpointRow, 'mtls'> | null,
  now: Date,
): EndpointMtls | null {
  if (input === null) return null
  const held = current?.mtls ?? null
  if (input.private_key === undefined && held === null) throw refuse('mtls.private_key', 'is required')
  const heldKey = held && box.open(base64ToBytes(held.private_key_sealed))
  const privateKey = input.private_key ?? heldKey!
  const checked = checkEndpointMtls({ certificate: input.certificate, private_key: privateKey, ca: input.ca ?? null }, now)
  if (!checked.ok) throw new OpError(checked.problem.code, `${checked.problem.field}: ${checked.problem.message}`, checked.problem.field)
  // The same key given again keeps its seal: an unchanged update writes no entry.
  const sealed = privateKey === heldKey ? held!.private_key_sealed : bytesToBase64(box.seal(privateKey))
  return { ...checked.mtls, private_key_sealed: sealed }
}

/**
 * The `mtls` and `oauth2` of a create (`current` null) or an update (the endpoint as locked; a
 * field left out stays as it is): checked, secrets sealed. A client certificate is presented
 * in a TLS handshake only, so the endpoint's URL (`url`, the new one or the held one) must be
 * https while it has one: on http it would silently not be.
 */
export function sealEndpointAuth(
  deps: { secretBox: SecretBox; egressPolicy: EgressPolicy },
  now: Date,
  input: { mtls?: EndpointMtlsRequest | undefined; oauth2?: EndpointOauth2Request | undefined },
  current: Pick<EndpointRow, 'mtls' | 'oauth2'> | null,
  url: string,
): { mtls?: EndpointMtls | null; oauth2?: EndpointOauth2 | null } {
  const auth = {
    ...(input.mtls !== undefined && { mtls: sealEndpointMtls(deps.secretBox, input.mtls, current, now) }),
    ...(input.oauth2 !== undefined && { oauth2: sealEndpointOauth2(deps.secretBox, deps.egressPolicy, input.oauth2, current) }),
  }
  const mtls = auth.mtls !== undefined ? auth.mtls : (current?.mtls ?? null)
  if (mtls !== null && !/^https:/i.test(url)) throw refuse('mtls', 'needs an https endpoint URL (a client certificate is presented in the TLS handshake)')
  return auth
}

/** Checks the token URL with the egress rule the endpoint URL meets, and seals the secret. */
export function sealEndpointOauth2(
  box: SecretBox,
  policy: EgressPolicy,
  input: EndpointOauth2Request,
  current: Pick<EndpointRow, 'oauth2'> | null,
): EndpointOauth2 | null {
  if (input === null) return null
  const problem = checkEndpointUrl(input.token_url, policy)
  if (problem) throw new OpError(problem.code, `oauth2.token_url: ${problem.message}`, 'oauth2.token_url')
  const held = current?.oauth2 ?? null
  if (input.client_secret === undefined && held === null) {
    throw new OpError('invalid_input', 'oauth2.client_secret: is required', 'oauth2.client_secret')
  }
  // The held secret goes only to the token URL it was given for: else an admin token that never
  // saw it could point token_url at a server of its own and read it from the basic credentials.
  if (input.client_secret === undefined && held !== null && held.token_url !== input.token_url) {
    throw new OpError('invalid_input', 'oauth2.client_secret: is required when token_url changes', 'oauth2.client_secret')
  }
  return {
    token_url: input.token_url,
    client_id: input.client_id,
    client_secret_sealed:
      input.client_secret === undefined || (held !== null && box.open(base64ToBytes(held.client_secret_sealed)) === input.client_secret)
        ? held!.client_secret_sealed
        : bytesToBase64(box.seal(input.client_secret)),
    scope: input.scope ?? null,
    audience: input.audience ?? null,
  }
}

export function endpointMtlsView(mtls: EndpointMtls | null): z.input<typeof endpointMtlsOutput> {
  return mtls && { certificate: mtls.certificate, fingerprint: mtls.fingerprint, subject: certificateSubject(mtls.certificate), not_after: mtls.not_after, ca: mtls.ca }
}

export function endpointOauth2View(oauth2: EndpointOauth2 | null): z.input<typeof endpointOauth2Output> {
  return oauth2 && { token_url: oauth2.token_url, client_id: oauth2.client_id, scope: oauth2.scope, audience: oauth2.audience }
}

const REDACTED = '[redacted]'

/** An input as it may be logged: the private key and the client secret replaced. */
export function authInputForLog(input: unknown): unknown {
  if (input === null || typeof input !== 'object') return input
  const record = input as Record<string, unknown>
  const redact = (value: unknown, key: string) =>
    value !== null && typeof value === 'object' && key in value ? { ...value, [key]: REDACTED } : value
  return {
    ...record,
    ...('mtls' in record ? { mtls: redact(record['mtls'], 'private_key') } : {}),
    ...('oauth2' in record ? { oauth2: redact(record['oauth2'], 'client_secret') } : {}),
  }
}
