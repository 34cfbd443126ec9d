import { describe, expect, it } from 'vitest'
import { checkpointBody, signNote } from '@hookledger/ledger'
import { MAX_ADD_CHECKPOINT_BODY_BYTES, MAX_CONSISTENCY_PROOF_LINES, parseAddCheckpointRequest } from './add-checkpoint-request.js'

const ORIGIN = 'example.com/log'
const SEED = new Uint8Array(32).fill(7)
const ROOT = new Uint8Array(32).fill(9)
const NOTE = signNote(checkpointBody({ origin: ORIGIN, size: 20, root: ROOT }), [{ name: ORIGIN, seed: SEED }])
/** A canonical base64 hash line (32 bytes of `n`). */
const hashLine = (n: number) => Buffer.alloc(32, n).toString('base64')
const body = (header: string[], note = NOTE) => header.map((l) => `${l}\n`).join('') + '\n' + note

describe('parseAddCheckpointRequest', () => {
  it('reads the old size, the proof lines and the note exactly as sent', () => {
    const parsed = parseAddCheckpointRequest(body(['old 12', hashLine(1), hashLine(2)]))
    expect(parsed.ok).toBe(true)
    if (!parsed.ok) return
    expect(parsed.request.oldSize).toBe(12n)
    expect(parsed.request.proof.map((h) => Buffer.from(h).toString('base64'))).toEqual([hashLine(1), hashLine(2)])
    expect(parsed.request.note).toBe(NOTE)
    expect(parsed.request.checkpoint.origin).toBe(ORIGIN)
    expect(parsed.request.checkpoint.size).toBe(20n)
  })

  it('takes bytes as well as text, and the spec example shape with no proof', () => {
    const text = body(['old 0'])
    const fromBytes = parseAddCheckpointRequest(new TextEncoder().encode(text))
    expect(fromBytes).toEqual(parseAddCheckpointRequest(text))
    expect(fromBytes.ok && fromBytes.request.proof).toEqual([])
  })

  it('accepts 63 proof lines and the largest uint64 old size', () => {
    expect(parseAddCheckpointRequest(body(['old 5', ...Array.from({ length: MAX_CONSISTENCY_PROOF_LINES }, (_, i) => hashLine(i))])).ok).toBe(true)
    const max = parseAddCheckpointRequest(body(['old 18446744073709551615']))
    expect(max.ok && max.request.oldSize).toBe(2n ** 64n - 1n)
  })

  const refused: [string, string | Uint8Array, RegExp][] = [
    ['an empty body', '', /no empty line/],
    ['no empty line before the note', `old 0\n${NOTE}`.replace('\n\n', '\n'), /no empty line/],
    ['a missing old line', body([]), /old <size>/],
    ['"old" with a leading zero', body(['old 01']), /old <size>/],
    ['a negative old size', body(['old -1']), /old <size>/],
    ['an old size with a sign', body(['old +1']), /old <size>/],
    ['no old size', body(['old ']), /old <size>/],
    ['a capitalised keyword', body(['Old 1']), /old <size>/],
    ['two spaces', body(['old  1']), /old <size>/],
    ['a trailing space', body(['old 1 ']), /old <size>/],
    ['a CRLF line end', body(['old 1\r']), /old <size>/],
    ['an old size past uint64', body(['old 18446744073709551616']), /uint64/],
    ['an old size of 21 digits', body(['old 100000000000000000000']), /old <size>/],
    ['64 proof lines', body(['old 5', ...Array.from({ length: 64 }, (_, i) => hashLine(i))]), /more than 63/],
    ['a proof line of 31 bytes', body(['old 5', Buffer.alloc(31, 1).toString('base64')]), /line 1 is not/],
    ['a proof line of 33 bytes', body(['old 5', Buffer.alloc(33, 1).toString('base64')]), /line 1 is not/],
    ['a proof line without padding', body(['old 5', hashLine(1).slice(0, -1)]), /line 1 is not/],
    ['a proof line with unused bits set', body(['old 5', hashLine(0).slice(0, 42) + 'B=']), /line 1 is not/],
    ['a proof line in base64url', body(['old 5', Buffer.alloc(32, 0xfb).toString('base64url') + '=']), /line 1 is not/],
    ['a proof line with a space', body(['old 5', ' ' + hashLine(1)]), /line 1 is not/],
    ['an empty proof line before the separator', `old 5\n${hashLine(1)}\n\n\n${NOTE}`, /malformed/],
    ['a note without signatures', body(['old 0'], checkpointBody({ origin: ORIGIN, size: 20, root: ROOT })), /malformed/],
    ['a note that is not a checkpoint', body(['old 0'], signNote('hello\n', [{ name: ORIGIN, seed: SEED }])), /malformed/],
    ['a checkpoint size with a leading zero', body(['old 0'], NOTE.replace('\n20\n', '\n020\n')), /malformed/],
    ['a signature line that is not one', body(['old 0'], NOTE + 'junk\n'), /malformed/],
    ['a note without its final newline', body(['old 0'], NOTE.slice(0, -1)), /malformed/],
    ['bytes that are not UTF-8', Uint8Array.of(...new TextEncoder().encode('old 0\n\n'), 0xff, 0xfe), /UTF-8/],
    ['a body past the limit', body(['old 0'], NOTE + ' '.repeat(MAX_ADD_CHECKPOINT_BODY_BYTES)), /larger than/],
  ]
  it.each(refused)('refuses %s', (_, input, reason) => {
    const parsed = parseAddCheckpointRequest(input)
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(parsed.reason).toMatch(reason)
  })
})
