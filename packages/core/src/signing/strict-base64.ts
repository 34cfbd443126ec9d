/**
 * Standard base64 (padding optional), decoded strictly: `Buffer.from(…, 'base64')` silently
 * skips bad characters and accepts URL-safe ones, so the alphabet and the length are checked
 * first. Returns null on anything else; callers word their own error, never echoing the value.
 */
export function decodeStrictBase64(encoded: string): Uint8Array | null {
  const unpadded = encoded.replace(/={1,2}$/, '')
  const padded = unpadded.length !== encoded.length
  if (
    !/^[A-Za-z0-9+/]+$/.test(unpadded) ||
    unpadded.length % 4 === 1 ||
    (padded && encoded.length % 4 !== 0)
  ) {
    return null
  }
  return new Uint8Array(Buffer.from(encoded, 'base64'))
}
