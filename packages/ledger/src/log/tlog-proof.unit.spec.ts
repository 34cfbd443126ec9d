import { describe, expect, it } from 'vitest'
import { NoteFormatError, signNote } from './signed-note.js'
import { checkpointBody } from './tlog-checkpoint.js'
import { formatTlogProof, parseTlogProof, type TlogProofFields } from './tlog-proof.js'

// c2sp.org/tlog-proof's example. Its signature lines are elided ("hI2DJw[...]1roloI="), so the
// header and checkpoint body are kept verbatim and the checkpoint re-signed by a test key.
const SPEC_HEAD = `c2sp.org/tlog-proof@v1
extra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ
index 73894
gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=
B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=
EKNzoDWG8LGC0Yp9o+sv3qllpMP9uHQ9B20KNL+Q1zs=
RoopEkOdqkYqMB4MJXrbt/hMjOxsVn0IrWjpz1ZMMes=
AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=
`
const SPEC_BODY = 'example.com/fancylog\n109482\nsFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n'
const SPEC_ELIDED_SIGS = `— example.com/fancylog hI2DJw[...]1roloI=
— witness1.example mJirIklj[...]qY9v2B/5bg==
— witness2.example TnKKVHLX[...]xwYwrSjgow==
— witness3.example S4X82uH5[...]3oEcROGLFQ==
`

const log = { name: 'example.com/fancylog', seed: new Uint8Array(32).fill(4) }
const specCheckpoint = signNote(SPEC_BODY, [log])
const smallCheckpoint = signNote(checkpointBody({ origin: 'o', size: 8, root: new Uint8Array(32) }), [log])
const hash = (n: number) => new Uint8Array(32).fill(n)
const b64 = (n: number) => Buffer.from(hash(n)).toString('base64')
const codeOf = (f: () => unknown): string => {
  try {
    f()
  } catch (error) {
    if (error instanceof NoteFormatError) return error.code
    throw error
  }
  return 'no error'
}
const proofText = (head: string, checkpoint = smallCheckpoint) => `${head}\n${checkpoint}`

describe('the spec example', () => {
  it('parses, and formats back byte for byte', () => {
    const text = `${SPEC_HEAD}\n${specCheckpoint}`
    const proof = parseTlogProof(text)
    expect(Buffer.from(proof.extra!).subarray(0, 30).toString()).toBe('age-v1.2.1-darwin-arm64.tar.gz')
    expect(proof.index).toBe(73894n)
    expect(proof.proof.map((h) => Buffer.from(h).toString('base64'))).toEqual(SPEC_HEAD.trim().split('\n').slice(3))
    expect(proof.checkpoint).toBe(specCheckpoint)
    expect(proof.body).toMatchObject({ origin: 'example.com/fancylog', size: 109482n })
    expect(formatTlogProof(proof)).toBe(text)
  })

  it('verbatim, its elided signatures are not base64', () => {
    expect(codeOf(() => parseTlogProof(`${SPEC_HEAD}\n${SPEC_BODY}\n${SPEC_ELIDED_SIGS}`))).toBe('malformed_signature_line')
  })
})

describe('round trips', () => {
  it.each([
    ['no extra, index 0, no hashes', { index: 0, proof: [], checkpoint: smallCheckpoint }],
    ['extra data', { extra: Uint8Array.of(1, 2, 3), index: 5n, proof: [hash(1), hash(2), hash(3)], checkpoint: smallCheckpoint }],
    ['the last leaf', { index: 7, proof: [hash(9), hash(8), hash(7)], checkpoint: smallCheckpoint }],
    ['64 hashes', { index: 0, proof: Array.from({ length: 64 }, (_, i) => hash(i)), checkpoint: smallCheckpoint }],
  ] as [string, TlogProofFields][])('%s', (_, fields) => {
    const text = formatTlogProof(fields)
    const parsed = parseTlogProof(text)
    expect(parsed).toMatchObject({ extra: fields.extra ?? null, index: BigInt(fields.index), proof: fields.proof, checkpoint: fields.checkpoint })
    expect(formatTlogProof(parsed)).toBe(text)
    expect(parseTlogProof(new Uint8Array(Buffer.from(text)))).toEqual(parsed)
  })

  it('omits an empty extra, as "no extra data"', () => {
    expect(formatTlogProof({ extra: new Uint8Array(), index: 0, proof: [], checkpoint: smallCheckpoint })).toBe(`c2sp.org/tlog-proof@v1\nindex 0\n\n${smallCheckpoint}`)
  })
})

describe('parseTlogProof refuses', () => {
  it.each([
    ['another first line', proofText('c2sp.org/tlog-proof@v2\nindex 0\n'), 'invalid_proof_header'],
    ['a first line with a trailing space', proofText('c2sp.org/tlog-proof@v1 \nindex 0\n'), 'invalid_proof_header'],
    ['no first line', proofText('index 0\n'), 'invalid_proof_header'],
    ['an empty extra', proofText('c2sp.org/tlog-proof@v1\nextra \nindex 0\n'), 'invalid_extra'],
    ['a non-base64 extra', proofText('c2sp.org/tlog-proof@v1\nextra abc!\nindex 0\n'), 'invalid_extra'],
    ['an unpadded extra', proofText('c2sp.org/tlog-proof@v1\nextra AQI\nindex 0\n'), 'invalid_extra'],
    ['"extra" with no space', proofText('c2sp.org/tlog-proof@v1\nextra\nindex 0\n'), 'invalid_index'],
    ['an extra line after the index', proofText(`c2sp.org/tlog-proof@v1\nindex 0\nextra AQI=\n`), 'invalid_proof_hash'],
    ['no index line', proofText(`c2sp.org/tlog-proof@v1\n${b64(1)}\n`), 'invalid_index'],
    ['only the first line', proofText('c2sp.org/tlog-proof@v1\n'), 'invalid_index'],
    ['a leading zero', proofText('c2sp.org/tlog-proof@v1\nindex 01\n'), 'invalid_index'],
    ['a negative index', proofText('c2sp.org/tlog-proof@v1\nindex -1\n'), 'invalid_index'],
    ['two spaces', proofText('c2sp.org/tlog-proof@v1\nindex  1\n'), 'invalid_index'],
    ['a capital I', proofText('c2sp.org/tlog-proof@v1\nIndex 1\n'), 'invalid_index'],
    ['an empty index', proofText('c2sp.org/tlog-proof@v1\nindex \n'), 'invalid_index'],
    ['an index of 2^64', proofText('c2sp.org/tlog-proof@v1\nindex 18446744073709551616\n'), 'invalid_index'],
    ['an index at the tree size', proofText('c2sp.org/tlog-proof@v1\nindex 8\n'), 'index_out_of_range'],
    ['a 31-byte hash', proofText(`c2sp.org/tlog-proof@v1\nindex 0\n${Buffer.alloc(31).toString('base64')}\n`), 'invalid_proof_hash'],
    ['a non-base64 hash', proofText('c2sp.org/tlog-proof@v1\nindex 0\nnot base64\n'), 'invalid_proof_hash'],
    ['a hash with a trailing space', proofText(`c2sp.org/tlog-proof@v1\nindex 0\n${b64(1)} \n`), 'invalid_proof_hash'],
    ['65 hashes', proofText(`c2sp.org/tlog-proof@v1\nindex 0\n${`${b64(1)}\n`.repeat(65)}`), 'too_many_proof_hashes'],
    ['no empty line before the checkpoint', `c2sp.org/tlog-proof@v1\nindex 0\n${smallCheckpoint.replace('\n\n', '\n')}`, 'malformed_proof'],
    ['no checkpoint', 'c2sp.org/tlog-proof@v1\nindex 0\n\n', 'malformed_note'],
    ['a checkpoint without signatures', proofText('c2sp.org/tlog-proof@v1\nindex 0\n', 'o\n8\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n'), 'malformed_note'],
    ['a checkpoint without its final newline', proofText('c2sp.org/tlog-proof@v1\nindex 0\n', smallCheckpoint.slice(0, -1)), 'malformed_note'],
    ['a checkpoint with a leading-zero size', proofText('c2sp.org/tlog-proof@v1\nindex 0\n', signNote('o\n08\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', [log])), 'invalid_tree_size'],
    ['a second empty line', proofText('c2sp.org/tlog-proof@v1\nindex 0\n', `\n${smallCheckpoint}`), 'invalid_origin'],
    ['CRLF line endings', `c2sp.org/tlog-proof@v1\r\nindex 0\r\n\r\n${smallCheckpoint}`, 'invalid_proof_header'],
    ['an empty input', '', 'malformed_proof'],
  ])('%s', (_, text, code) => {
    expect(codeOf(() => parseTlogProof(text))).toBe(code)
  })

  it('invalid UTF-8', () => {
    expect(codeOf(() => parseTlogProof(Uint8Array.of(0xff, 0x0a, 0x0a)))).toBe('malformed_proof')
  })

  it('never throws anything but NoteFormatError on mangled proofs', () => {
    const text = formatTlogProof({ extra: Uint8Array.of(1, 2), index: 3, proof: [hash(1), hash(2), hash(3)], checkpoint: smallCheckpoint })
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31)
    const alphabet = ['\n', '\n\n', '—', ' ', '0', '9', '=', 'A', '\u0000', '\ud800', '']
    for (let i = 0; i < 3000; i++) {
      const at = next() % text.length
      const mangled = text.slice(0, at) + alphabet[next() % alphabet.length]! + text.slice(at + (next() % 3))
      expect(() => {
        try {
          parseTlogProof(mangled)
        } catch (error) {
          if (!(error instanceof NoteFormatError)) throw error
        }
      }).not.toThrow()
    }
  })
})

describe('formatTlogProof refuses', () => {
  it.each([
    ['a negative index', { index: -1, proof: [], checkpoint: smallCheckpoint }, 'invalid_index'],
    ['a fractional index', { index: 0.5, proof: [], checkpoint: smallCheckpoint }, 'invalid_index'],
    ['an index past the tree', { index: 8, proof: [], checkpoint: smallCheckpoint }, 'index_out_of_range'],
    ['a short hash', { index: 0, proof: [new Uint8Array(31)], checkpoint: smallCheckpoint }, 'invalid_proof_hash'],
    ['65 hashes', { index: 0, proof: Array.from({ length: 65 }, () => hash(1)), checkpoint: smallCheckpoint }, 'too_many_proof_hashes'],
    ['a checkpoint that is no note', { index: 0, proof: [], checkpoint: 'o\n8\nAAAA\n' }, 'malformed_note'],
    ['a note that is no checkpoint', { index: 0, proof: [], checkpoint: signNote('hello\n', [log]) }, 'malformed_checkpoint'],
  ] as [string, TlogProofFields, string][])('%s', (_, fields, code) => {
    expect(codeOf(() => formatTlogProof(fields))).toBe(code)
  })
})
