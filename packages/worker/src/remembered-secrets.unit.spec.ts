import { describe, expect, it } from 'vitest'
import { createSecretBox, generateMasterKey, type SecretBox } from '@hookledger/core'
import { rememberingSecretBox } from './remembered-secrets.js'

/** A box that counts how often it really opens. */
function counting(box: SecretBox): SecretBox & { opens: number } {
  const counted = { opens: 0, seal: box.seal, open: (sealed: Uint8Array) => (counted.opens++, box.open(sealed)) }
  return counted
}

describe('rememberingSecretBox', () => {
  it('opens a sealed value once and answers the same after', () => {
    const inner = counting(createSecretBox(generateMasterKey()))
    const box = rememberingSecretBox(inner)
    const sealed = box.seal('whsec_one')
    expect(box.open(sealed)).toBe('whsec_one')
    expect(box.open(Uint8Array.from(sealed))).toBe('whsec_one') // another copy of the same bytes
    expect(inner.opens).toBe(1)
  })

  it('a rotated secret is a new sealed value: opened anew', () => {
    const inner = counting(createSecretBox(generateMasterKey()))
    const box = rememberingSecretBox(inner)
    expect(box.open(box.seal('whsec_old'))).toBe('whsec_old')
    expect(box.open(box.seal('whsec_old'))).toBe('whsec_old') // a fresh nonce: different bytes
    expect(box.open(box.seal('whsec_new'))).toBe('whsec_new')
    expect(inner.opens).toBe(3)
  })

  it('a value sealed under another key, or corrupted, throws every time', () => {
    const box = rememberingSecretBox(createSecretBox(generateMasterKey()))
    const foreign = createSecretBox(generateMasterKey()).seal('whsec_x')
    expect(() => box.open(foreign)).toThrow(/wrong master key/)
    expect(() => box.open(foreign)).toThrow(/wrong master key/)
  })

  it('a view into a larger buffer is keyed by its own bytes only', () => {
    const box = rememberingSecretBox(createSecretBox(generateMasterKey()))
    const a = box.seal('whsec_a')
    const b = box.seal('whsec_b')
    const both = new Uint8Array(a.length + b.length)
    both.set(a, 0)
    both.set(b, a.length)
    expect(box.open(both.subarray(0, a.length))).toBe('whsec_a')
    expect(box.open(both.subarray(a.length))).toBe('whsec_b')
  })

  it('forgets everything when full, and still answers right', () => {
    const inner = counting(createSecretBox(generateMasterKey()))
    const box = rememberingSecretBox(inner, 2)
    const sealed = ['a', 'b', 'c'].map((s) => box.seal(s))
    expect(sealed.map((s) => box.open(s))).toEqual(['a', 'b', 'c'])
    expect(box.open(sealed[2]!)).toBe('c')
    expect(box.open(sealed[0]!)).toBe('a')
    expect(inner.opens).toBe(4)
  })
})
