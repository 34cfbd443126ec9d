import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto'

/**
 * The rule for an endpoint's client certificate (`mtls` on create/update): each PEM parses, the
 * key is the certificate's, the certificate has not expired on the injected clock, and each part
 * is at most 16 KiB. Pure apart from parsing; refusals name the field (`mtls.private_key`, …) and
 * never quote the key.
 */

export const MAX_MTLS_PEM_BYTES = 16 * 1024

export interface EndpointMtlsInput {
  readonly certificate: string
  readonly private_key: string
  readonly ca?: string | null | undefined
}

/** What is kept in clear beside the sealed key, and what a read shows. */
export interface CheckedEndpointMtls {
  readonly certificate: string
  readonly ca: string | null
  readonly not_after: string
  readonly fingerprint: string
}

export interface EndpointMtlsProblem {
  readonly code: 'invalid_mtls'
  readonly field: string
  readonly message: string
}

type Checked = { ok: true; mtls: CheckedEndpointMtls } | { ok: false; problem: EndpointMtlsProblem }

const refuse = (field: string, message: string): Checked => ({ ok: false, problem: { code: 'invalid_mtls', field, message } })

/** Every certificate of a PEM bundle (a CA file may hold several); null if one does not parse. */
function parseCertificates(pem: string): X509Certificate[] | null {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  if (blocks.length === 0) return null
  try {
    return blocks.map((block) => new X509Certificate(block))
  } catch {
    return null
  }
}

function parseKey(pem: string): KeyObject | null {
  // An encrypted key would need a passphrase the worker does not have.
  if (!pem.includes('-----BEGIN') || pem.includes('ENCRYPTED')) return null
  try {
    return createPrivateKey({ key: pem, format: 'pem' })
  } catch {
    return null
  }
}

export function checkEndpointMtls(input: EndpointMtlsInput, now: Date): Checked {
  const parts = [['certificate', input.certificate], ['private_key', input.private_key], ['ca', input.ca ?? '']] as const
  for (const [name, pem] of parts) {
    if (Buffer.byteLength(pem) > MAX_MTLS_PEM_BYTES) return refuse(`mtls.${name}`, `is longer than ${MAX_MTLS_PEM_BYTES} bytes`)
  }
  const chain = parseCertificates(input.certificate)
  if (chain === null) return refuse('mtls.certificate', 'is not a PEM certificate')
  const leaf = chain[0]!
  const key = parseKey(input.private_key)
  if (key === null) return refuse('mtls.private_key', 'is not an unencrypted PEM private key')
  if (!leaf.checkPrivateKey(key)) return refuse('mtls.private_key', 'does not match the certificate')
  const notAfter = new Date(leaf.validTo)
  if (!(notAfter.getTime() > now.getTime())) return refuse('mtls.certificate', `expired at ${notAfter.toISOString()}`)
  if (new Date(leaf.validFrom).getTime() > now.getTime()) return refuse('mtls.certificate', `is not valid before ${new Date(leaf.validFrom).toISOString()}`)
  const ca = input.ca === undefined || input.ca === null || input.ca.trim() === '' ? null : input.ca
  if (ca !== null && parseCertificates(ca) === null) return refuse('mtls.ca', 'is not a PEM certificate (or bundle)')
  return {
    ok: true,
    mtls: {
      certificate: input.certificate,
      ca,
      not_after: notAfter.toISOString(),
      fingerprint: leaf.fingerprint256,
    },
  }
}

/** The certificate's subject as one line, for reads (`CN=client.example, O=Acme`); null if unreadable. */
export function certificateSubject(pem: string): string | null {
  const leaf = parseCertificates(pem)?.[0]
  return leaf ? leaf.subject.split('\n').filter(Boolean).join(', ') : null
}
