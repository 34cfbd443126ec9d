import { createHash } from 'node:crypto'
import nacl from 'tweetnacl'
import { describe, expect, it } from 'vitest'
import { addNoteSignatures, ed25519NoteVerifier, encodeVerifierKey, NoteFormatError, noteSignerPublicKey, openNote, parseNote, signNote } from './signed-note.js'
import { checkpointBody } from './tlog-checkpoint.js'
import {
  cosignatureBytesTimestamp,
  cosignatureMessage,
  cosignatureTimestamp,
  cosignatureVerifier,
  cosignCheckpoint,
  cosignerKeyId,
  cosignerVerifierKey,
  encodeCosignerKey,
} from './tlog-cosignature.js'

// c2sp.org/tlog-cosignature: the cosigned example checkpoint and the signed-message example.
const SPEC_BODY = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n'
const SPEC_NOTE =
  `${SPEC_BODY}\n` +
  '— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n' +
  '— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n'
const SPEC_MESSAGE = 'cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n'

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const codeOf = (f: () => unknown): string => {
  try {
    f()
  } catch (error) {
    if (error instanceof NoteFormatError) return error.code
    throw error
  }
  return 'no error'
}

const log = { name: 'example.com/behind-the-sofa', seed: new Uint8Array(32).fill(1) }
const witness = { name: 'witness.example.com/w1', seed: new Uint8Array(32).fill(2) }
const logVerifier = ed25519NoteVerifier(encodeVerifierKey(log.name, noteSignerPublicKey(log)))
const witnessVerifier = cosignatureVerifier(cosignerVerifierKey(witness))
const T = 1679315147
const logNote = signNote(SPEC_BODY, [log])
const cosigned = addNoteSignatures(logNote, cosignCheckpoint(SPEC_BODY, witness, T))
/** A cosignature line of `witness` with its 72 signature bytes replaced. */
const lineWith = (bytes: Uint8Array) => `— ${witness.name} ${Buffer.concat([cosignerKeyId(witness.name, noteSignerPublicKey(witness)), bytes]).toString('base64')}\n`
const witnessBytes = () => Buffer.from(parseNote(cosigned).signatures[1]!.bytes)

describe('the spec examples', () => {
  it('builds the signed message byte for byte', () => {
    expect(cosignatureMessage(SPEC_BODY, T)).toBe(SPEC_MESSAGE)
    expect(cosignatureMessage(SPEC_BODY, BigInt(T))).toBe(SPEC_MESSAGE)
  })

  it("reads the example cosignature's framing: key ID, then the timestamp of the message example", () => {
    const line = parseNote(SPEC_NOTE).signatures[1]!
    expect(line.name).toBe('witness.example.com/w1')
    expect(hex(line.keyId)).toBe('8d66cf3f')
    expect(line.bytes).toHaveLength(72)
    expect(cosignatureBytesTimestamp(line.bytes)).toBe(1679315147n)
    // No known key verified it, so no verified timestamp.
    expect(cosignatureTimestamp(line)).toBeNull()
  })
})

describe('keys', () => {
  it('encodes witness vkeys with type 0x04 and the 0x04 key ID', () => {
    const publicKey = noteSignerPublicKey(witness)
    const vkey = encodeCosignerKey(witness.name, publicKey)
    const [name, id, material] = vkey.split('+', 3) as [string, string, string]
    const raw = Buffer.from(vkey.slice(name.length + id.length + 2), 'base64')
    expect(name).toBe(witness.name)
    expect(raw[0]).toBe(0x04)
    expect(hex(raw.subarray(1))).toBe(hex(publicKey))
    const want = createHash('sha256').update(`${witness.name}\n`).update(Buffer.of(0x04)).update(publicKey).digest().subarray(0, 4)
    expect(id).toBe(want.toString('hex'))
    expect(material.length).toBeGreaterThan(0)
    expect(cosignerVerifierKey(witness)).toBe(vkey)
  })

  it('gives one Ed25519 key different key IDs as a note signer (0x01) and a cosigner (0x04)', () => {
    const publicKey = noteSignerPublicKey(witness)
    expect(hex(cosignerKeyId(witness.name, publicKey))).not.toBe(hex(ed25519NoteVerifier(encodeVerifierKey(witness.name, publicKey)).keyId))
  })

  it.each([
    ['an Ed25519 note key as a cosigner', () => cosignatureVerifier(encodeVerifierKey('a', new Uint8Array(32).fill(9)))],
    ['a cosigner key as an Ed25519 note key', () => ed25519NoteVerifier(encodeCosignerKey('a', new Uint8Array(32).fill(9)))],
  ])('refuses %s', (_, f) => {
    expect(codeOf(f)).toBe('unsupported_key_type')
  })
})

describe('cosignCheckpoint and cosignatureVerifier', () => {
  it('matches a cosignature built with tweetnacl from the spec alone', () => {
    const pair = nacl.sign.keyPair.fromSeed(witness.seed)
    const stamp = Buffer.alloc(8)
    stamp.writeBigUInt64BE(BigInt(T))
    const keyId = createHash('sha256').update(`${witness.name}\n`).update(Buffer.of(0x04)).update(pair.publicKey).digest().subarray(0, 4)
    const sig = nacl.sign.detached(Buffer.from(SPEC_MESSAGE), pair.secretKey)
    const want = `— ${witness.name} ${Buffer.concat([keyId, stamp, sig]).toString('base64')}\n`
    expect(cosignCheckpoint(SPEC_BODY, witness, T)).toBe(want)
  })

  it('verifies beside the log signature, and exposes the verified timestamp', () => {
    const opened = openNote(cosigned, [logVerifier, witnessVerifier])
    expect(opened.signatures.map((s) => [s.name, s.verified])).toEqual([
      [log.name, true],
      [witness.name, true],
    ])
    expect(cosignatureTimestamp(opened.signatures[1]!)).toBe(BigInt(T))
    expect(cosignatureTimestamp(opened.signatures[0]!)).toBeNull()
    const sig = opened.signatures[1]!.bytes
    expect(nacl.sign.detached.verify(Buffer.from(SPEC_MESSAGE), sig.subarray(8), nacl.sign.keyPair.fromSeed(witness.seed).publicKey)).toBe(true)
  })

  it.each([
    ['zero', 0],
    ['the largest allowed', 2n ** 63n - 1n],
    ['a recent time', 1767225600n],
  ] as const)('round-trips the timestamp %s', (_, t) => {
    const note = addNoteSignatures(logNote, cosignCheckpoint(SPEC_BODY, witness, t))
    expect(cosignatureTimestamp(openNote(note, [witnessVerifier]).signatures[1]!)).toBe(BigInt(t))
  })

  it('covers extension lines', () => {
    const body = checkpointBody({ origin: log.name, size: 2, root: new Uint8Array(32), extensions: ['ext'] })
    const note = addNoteSignatures(signNote(body, [log]), cosignCheckpoint(body, witness, T))
    expect(openNote(note, [witnessVerifier]).signatures[1]!.verified).toBe(true)
    const stripped = note.replace('ext\n', 'exu\n')
    expect(codeOf(() => openNote(stripped, [witnessVerifier]))).toBe('bad_signature')
  })

  it.each([
    ['another timestamp in the signature', () => { const b = witnessBytes(); b.writeBigUInt64BE(BigInt(T + 1)); return lineWith(b) }],
    ['the timestamp high bit set (over 2^63 - 1)', () => { const b = witnessBytes(); b[0]! |= 0x80; return lineWith(b) }],
    ['a changed signature byte', () => { const b = witnessBytes(); b[40]! ^= 1; return lineWith(b) }],
    ['71 bytes', () => lineWith(witnessBytes().subarray(0, 71))],
    ['73 bytes', () => lineWith(Buffer.concat([witnessBytes(), Buffer.of(0)]))],
    ['a bare Ed25519 signature of the text (no timestamp)', () => lineWith(witnessBytes().subarray(8))],
  ])('fails %s', (_, line) => {
    expect(codeOf(() => openNote(logNote + line(), [logVerifier, witnessVerifier]))).toBe('bad_signature')
  })

  it('fails on a changed checkpoint', () => {
    const changed = cosigned.replace('20852163', '20852164')
    expect(codeOf(() => openNote(changed, [witnessVerifier]))).toBe('bad_signature')
  })

  it('refuses cosignatures from after maxTimestamp when asked to', () => {
    expect(openNote(cosigned, [cosignatureVerifier(cosignerVerifierKey(witness), { maxTimestamp: T })]).signatures[1]!.verified).toBe(true)
    expect(codeOf(() => openNote(cosigned, [cosignatureVerifier(cosignerVerifierKey(witness), { maxTimestamp: T - 1 })]))).toBe('bad_signature')
  })

  it('is ignored by a verifier of the same key as a 0x01 note key (another key ID)', () => {
    const asNoteKey = ed25519NoteVerifier(encodeVerifierKey(witness.name, noteSignerPublicKey(witness)))
    expect(openNote(cosigned, [logVerifier, asNoteKey]).signatures[1]!.verified).toBeNull()
  })

  it.each([
    ['a body that is not a checkpoint', 'hello\n', T, 'malformed_checkpoint'],
    ['a body without its newline', SPEC_BODY.slice(0, -1), T, 'malformed_checkpoint'],
    ['a negative timestamp', SPEC_BODY, -1, 'invalid_timestamp'],
    ['a fractional timestamp', SPEC_BODY, 1.5, 'invalid_timestamp'],
    ['a timestamp of 2^63', SPEC_BODY, 2n ** 63n, 'invalid_timestamp'],
  ] as [string, string, number | bigint, string][])('cosignCheckpoint refuses %s', (_, body, t, code) => {
    expect(codeOf(() => cosignCheckpoint(body, witness, t))).toBe(code)
  })
})
