import { describe, expect, it } from 'vitest'
import { encodeVerifierKey, NoteFormatError, noteSignerPublicKey, ed25519NoteVerifier, signNote } from './signed-note.js'
import { type CheckpointFields, checkpointBody, openCheckpoint, parseCheckpointBody } from './tlog-checkpoint.js'

// c2sp.org/tlog-checkpoint's example, and tlog-cosignature's (the same one, cosigned).
const SPEC_BODY = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n'
const SPEC_LOG_SIG = '— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n'
const SPEC_WITNESS_SIG = '— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n'
const SPEC_ROOT = Buffer.from('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'base64')

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
const root = new Uint8Array(32).fill(0xab)
const rootB64 = Buffer.from(root).toString('base64')

describe('the spec example', () => {
  it('parses, and encodes back byte for byte', () => {
    const cp = parseCheckpointBody(SPEC_BODY)
    expect(cp).toEqual({ origin: 'example.com/behind-the-sofa', size: 20852163n, root: new Uint8Array(SPEC_ROOT), extensions: [] })
    expect(checkpointBody(cp)).toBe(SPEC_BODY)
    expect(checkpointBody({ ...cp, size: 20852163 })).toBe(SPEC_BODY)
  })

  it('opens as a note: the log signature and the cosignature are lines of unknown keys here', () => {
    const opened = openCheckpoint(`${SPEC_BODY}\n${SPEC_LOG_SIG}${SPEC_WITNESS_SIG}`, [], { requireVerified: false })
    expect(opened.text).toBe(SPEC_BODY)
    expect(opened.checkpoint.size).toBe(20852163n)
    expect(opened.signatures.map((s) => [s.name, hex(s.keyId), s.bytes.length, s.verified])).toEqual([
      ['example.com/behind-the-sofa', '033de0ae', 64, null],
      ['witness.example.com/w1', '8d66cf3f', 72, null],
    ])
  })
})

describe('round trips', () => {
  it.each([
    ['an empty tree', { origin: 'a', size: 0, root }],
    ['one leaf', { origin: 'example.com/log42', size: 1n, root }],
    ['the largest safe number', { origin: 'o', size: Number.MAX_SAFE_INTEGER, root }],
    ['the largest uint64', { origin: 'o', size: 2n ** 64n - 1n, root }],
    ['an origin with spaces and plus (only a recommendation)', { origin: 'my log + friends', size: 5, root }],
    ['a unicode origin', { origin: 'ünï.example/lög', size: 5, root }],
    ['extension lines', { origin: 'o', size: 9, root, extensions: ['ext one', 'two — ✓'] }],
  ] as [string, CheckpointFields][])('%s', (_, fields) => {
    const body = checkpointBody(fields)
    const parsed = parseCheckpointBody(body)
    expect(parsed).toEqual({ origin: fields.origin, size: BigInt(fields.size), root, extensions: [...(fields.extensions ?? [])] })
    expect(checkpointBody(parsed)).toBe(body)
  })

  it('opens a signed checkpoint', () => {
    const log = { name: 'example.com/log42', seed: new Uint8Array(32).fill(5) }
    const note = signNote(checkpointBody({ origin: log.name, size: 3, root }), [log])
    const opened = openCheckpoint(note, [ed25519NoteVerifier(encodeVerifierKey(log.name, noteSignerPublicKey(log)))])
    expect(opened.checkpoint.size).toBe(3n)
    expect(opened.signatures[0]!.verified).toBe(true)
  })
})

describe('parseCheckpointBody refuses', () => {
  it.each([
    ['no final newline', SPEC_BODY.slice(0, -1), 'malformed_checkpoint'],
    ['two lines', 'example.com/a\n1\n', 'malformed_checkpoint'],
    ['an empty text', '', 'malformed_checkpoint'],
    ['just a newline', '\n', 'malformed_checkpoint'],
    ['an empty origin', `\n1\n${rootB64}\n`, 'invalid_origin'],
    ['a leading zero', `o\n01\n${rootB64}\n`, 'invalid_tree_size'],
    ['a zero written 00', `o\n00\n${rootB64}\n`, 'invalid_tree_size'],
    ['a plus sign', `o\n+1\n${rootB64}\n`, 'invalid_tree_size'],
    ['a negative size', `o\n-1\n${rootB64}\n`, 'invalid_tree_size'],
    ['a space before the size', `o\n 1\n${rootB64}\n`, 'invalid_tree_size'],
    ['a decimal point', `o\n1.0\n${rootB64}\n`, 'invalid_tree_size'],
    ['an exponent', `o\n1e3\n${rootB64}\n`, 'invalid_tree_size'],
    ['hex', `o\n0x10\n${rootB64}\n`, 'invalid_tree_size'],
    ['an empty size', `o\n\n${rootB64}\n`, 'invalid_tree_size'],
    ['a size of 2^64', `o\n18446744073709551616\n${rootB64}\n`, 'invalid_tree_size'],
    ['a 31-byte root', `o\n1\n${Buffer.alloc(31).toString('base64')}\n`, 'invalid_root_hash'],
    ['a 33-byte root', `o\n1\n${Buffer.alloc(33).toString('base64')}\n`, 'invalid_root_hash'],
    ['a non-base64 root', 'o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I!\n', 'invalid_root_hash'],
    ['an unpadded root', 'o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n', 'invalid_root_hash'],
    ['a non-canonical root (unused bits set)', 'o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=\n', 'invalid_root_hash'],
    ['a hex root', `o\n1\n${'ab'.repeat(32)}\n`, 'invalid_root_hash'],
    ['an empty extension line', `o\n1\n${rootB64}\n\next\n`, 'invalid_extension'],
    ['a trailing empty line', `o\n1\n${rootB64}\n\n`, 'invalid_extension'],
    ['CRLF line endings', SPEC_BODY.replaceAll('\n', '\r\n'), 'malformed_checkpoint'],
    ['a control character', `o\u0007\n1\n${rootB64}\n`, 'malformed_checkpoint'],
  ])('%s', (_, text, code) => {
    expect(codeOf(() => parseCheckpointBody(text))).toBe(code)
  })
})

describe('checkpointBody refuses', () => {
  it.each([
    ['an empty origin', { origin: '', size: 1, root }, 'invalid_origin'],
    ['a two-line origin', { origin: 'a\nb', size: 1, root }, 'invalid_origin'],
    ['a control character in the origin', { origin: 'a\tb', size: 1, root }, 'invalid_origin'],
    ['a negative size', { origin: 'o', size: -1, root }, 'invalid_tree_size'],
    ['a fractional size', { origin: 'o', size: 1.5, root }, 'invalid_tree_size'],
    ['NaN', { origin: 'o', size: Number.NaN, root }, 'invalid_tree_size'],
    ['an unsafe number', { origin: 'o', size: 2 ** 60, root }, 'invalid_tree_size'],
    ['2^64', { origin: 'o', size: 2n ** 64n, root }, 'invalid_tree_size'],
    ['a short root', { origin: 'o', size: 1, root: new Uint8Array(31) }, 'invalid_root_hash'],
    ['an empty extension', { origin: 'o', size: 1, root, extensions: [''] }, 'invalid_extension'],
    ['a two-line extension', { origin: 'o', size: 1, root, extensions: ['a\nb'] }, 'invalid_extension'],
  ] as [string, CheckpointFields, string][])('%s', (_, fields, code) => {
    expect(codeOf(() => checkpointBody(fields))).toBe(code)
  })
})
