import nacl from 'tweetnacl'
import { describe, expect, it } from 'vitest'
import {
  addNoteSignatures,
  ed25519NoteVerifier,
  encodeVerifierKey,
  MAX_NOTE_SIGNATURES,
  NoteFormatError,
  type NoteSigner,
  noteSignerPublicKey,
  type NoteVerifier,
  openNote,
  parseNote,
  parseSignerKey,
  signNote,
} from './signed-note.js'

// golang.org/x/mod/sumdb/note note_test.go: keys, text, signatures and the expected note.
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW'
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz'
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop'
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
const PETER_SIG = '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n'
const ENOCH_SIG = '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n'

// c2sp.org/signed-note: the example vkey and the note it verifies, and the opening example.
const SPEC_VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k'
const SPEC_NOTE = 'This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n'
const POEM_TEXT = 'Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n'
const POEM_NOTE = `${POEM_TEXT}\n— quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n`

const peter = ed25519NoteVerifier(PETER_VKEY)
const enoch = ed25519NoteVerifier(ENOCH_VKEY)
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'))
const signer = (n: number, name = `log${n}.example/a`): NoteSigner => ({ name, seed: new Uint8Array(32).fill(n) })
const verifierOf = (s: NoteSigner) => ed25519NoteVerifier(encodeVerifierKey(s.name, noteSignerPublicKey(s)))
const codeOf = (f: () => unknown): string => {
  try {
    f()
  } catch (error) {
    if (error instanceof NoteFormatError) return error.code
    throw error
  }
  return 'no error'
}
/** Go's "insert ABCD at byte 60" of a signature line (bytes, not UTF-16 units: the em dash is 3 bytes). */
const mangle = (line: string) => {
  const b = Buffer.from(line)
  return Buffer.concat([b.subarray(0, 60), Buffer.from('ABCD'), b.subarray(60)]).toString()
}

describe('known answers', () => {
  it("signs Go's example note byte for byte", () => {
    expect(signNote(GO_TEXT, [parseSignerKey(PETER_SKEY)])).toBe(`${GO_TEXT}\n${PETER_SIG}`)
  })

  it("opens Go's example note", () => {
    const opened = openNote(`${GO_TEXT}\n${PETER_SIG}`, [peter])
    expect(opened.text).toBe(GO_TEXT)
    expect(opened.signatures).toHaveLength(1)
    expect(opened.signatures[0]).toMatchObject({ name: 'PeterNeumann', verified: true, verifier: peter, line: PETER_SIG.slice(0, -1) })
    expect(hex(opened.signatures[0]!.keyId)).toBe('c74f20a3')
    expect(opened.signatures[0]!.bytes).toHaveLength(64)
  })

  it("verifies the spec's example note with the spec's example vkey", () => {
    const opened = openNote(SPEC_NOTE, [ed25519NoteVerifier(SPEC_VKEY)])
    expect(opened.text).toBe('This is an example message.\n')
    expect(opened.signatures.map((s) => s.verified)).toEqual([true])
  })

  it("parses the spec's opening note: empty lines in the text, the text ending at the last blank line", () => {
    const opened = parseNote(POEM_NOTE)
    expect(opened.text).toBe(POEM_TEXT)
    expect(opened.signatures).toHaveLength(1)
    expect(opened.signatures[0]).toMatchObject({ name: 'quasimodo.example/salvatore', verified: null, verifier: null })
    expect(hex(opened.signatures[0]!.keyId)).toBe('367ba04b')
    expect(codeOf(() => openNote(POEM_NOTE, [peter]))).toBe('unverified_note')
  })

  it('signatures verify with tweetnacl over the UTF-8 text', () => {
    const s = signer(9, 'ünï.example/log')
    const text = 'ünïcödé ✓\n\nwith a blank line\n'
    const sig = openNote(signNote(text, [s]), [verifierOf(s)]).signatures[0]!
    expect(nacl.sign.detached.verify(utf8(text), sig.bytes, nacl.sign.keyPair.fromSeed(s.seed).publicKey)).toBe(true)
  })
})

describe("openNote: Go's verification semantics", () => {
  const both = `${GO_TEXT}\n${PETER_SIG}${ENOCH_SIG}`

  it.each([
    ['one known key', [peter], [true, null]],
    ['both known', [peter, enoch], [true, true]],
    ['a verifier for another name and key ID in the list too', [enoch, peter], [true, true]],
  ] as const)('%s', (_, verifiers, verified) => {
    const opened = openNote(both, verifiers)
    expect(opened.text).toBe(GO_TEXT)
    expect(opened.signatures.map((s) => [s.name, s.verified])).toEqual([
      ['PeterNeumann', verified[0]],
      ['EnochRoot', verified[1]],
    ])
  })

  it('refuses a note no known key signed, unless asked only to parse', () => {
    expect(codeOf(() => openNote(both, []))).toBe('unverified_note')
    expect(openNote(both, [], { requireVerified: false }).signatures.map((s) => s.verified)).toEqual([null, null])
  })

  it('ignores a key that shares only the name, or only the key ID, with a known key', () => {
    const peterSig = openNote(`${GO_TEXT}\n${PETER_SIG}`, [peter]).signatures[0]!
    const otherId: NoteVerifier = { ...peter, keyId: Uint8Array.of(0xc7, 0x4f, 0x20, 0xa4) }
    const otherName: NoteVerifier = { ...peter, name: 'PeterNeuman' }
    expect(codeOf(() => openNote(`${GO_TEXT}\n${PETER_SIG}`, [otherId, otherName]))).toBe('unverified_note')
    // A line with Peter's name and signature but another key ID is an unknown key, not a bad signature.
    const wrongId = `— PeterNeumann ${Buffer.concat([Buffer.of(0, 0, 0, 1), peterSig.bytes]).toString('base64')}\n`
    expect(openNote(`${GO_TEXT}\n${wrongId}${PETER_SIG}`, [peter]).signatures.map((s) => s.verified)).toEqual([null, true])
  })

  it('refuses two verifiers of one name and key ID when a line needs them', () => {
    expect(codeOf(() => openNote(`${GO_TEXT}\n${ENOCH_SIG}`, [enoch, peter, enoch]))).toBe('ambiguous_verifier')
    expect(openNote(`${GO_TEXT}\n${PETER_SIG}`, [enoch, peter, enoch]).signatures).toHaveLength(1)
  })

  it('accepts the 16 signatures the spec requires and up to 100 as Go; refuses 101', () => {
    expect(openNote(`${GO_TEXT}\n${PETER_SIG.repeat(16)}`, [peter]).signatures).toHaveLength(16)
    expect(openNote(`${GO_TEXT}\n${PETER_SIG.repeat(MAX_NOTE_SIGNATURES)}`, [peter]).signatures).toHaveLength(100)
    expect(codeOf(() => openNote(`${GO_TEXT}\n${PETER_SIG.repeat(101)}`, [peter]))).toBe('too_many_signatures')
    expect(codeOf(() => openNote(`${GO_TEXT}\n${PETER_SIG.repeat(101)}`, []))).toBe('too_many_signatures')
  })

  it("refuses a known key's bad signature (Go's ABCD insertion), or reports it when asked", () => {
    const bad = `${GO_TEXT}\n${mangle(PETER_SIG)}`
    expect(codeOf(() => openNote(bad, [peter]))).toBe('bad_signature')
    expect(openNote(bad, [peter], { rejectBadSignatures: false, requireVerified: false }).signatures.map((s) => s.verified)).toEqual([false])
  })

  it('returns every line, repeats included, checking each known one', () => {
    const note = `${GO_TEXT}\n${PETER_SIG}${PETER_SIG}${ENOCH_SIG}${ENOCH_SIG}${mangle(ENOCH_SIG)}`
    expect(openNote(note, [peter]).signatures.map((s) => [s.name, s.verified])).toEqual([
      ['PeterNeumann', true],
      ['PeterNeumann', true],
      ['EnochRoot', null],
      ['EnochRoot', null],
      ['EnochRoot', null],
    ])
    expect(codeOf(() => openNote(`${GO_TEXT}\n${PETER_SIG}${mangle(PETER_SIG)}`, [peter]))).toBe('bad_signature')
  })

  it.each(
    [0, 5, 30, GO_TEXT.length - 2, GO_TEXT.length - 1].map((at) => [at] as const),
  )('a text changed at character %i fails verification', (at) => {
    const text = GO_TEXT.slice(0, at) + (GO_TEXT[at] === 'x' ? 'y' : 'x') + GO_TEXT.slice(at + 1)
    expect(codeOf(() => openNote(`${text.endsWith('\n') ? text : `${text}\n`}\n${PETER_SIG}`, [peter]))).toBe('bad_signature')
  })

  it.each([4, 20, 40, 63].map((at) => [at] as const))('a signature changed at byte %i fails verification', (at) => {
    const raw = Buffer.from(PETER_SIG.slice('— PeterNeumann '.length, -1), 'base64')
    raw[4 + at]! ^= 0x01
    expect(codeOf(() => openNote(`${GO_TEXT}\n— PeterNeumann ${raw.toString('base64')}\n`, [peter]))).toBe('bad_signature')
  })
})

describe('openNote refuses malformed notes', () => {
  const cases: [string, string | Uint8Array, string][] = [
    // note_test.go's badMsgs.
    ['the text alone', GO_TEXT, 'malformed_note'],
    ['a text and a blank line, no signature', `${GO_TEXT}\n`, 'malformed_note'],
    ['a last signature line without its newline', `${GO_TEXT}\n${PETER_SIG.slice(0, -1)}`, 'malformed_note'],
    ['a control character', `\u0001${GO_TEXT}\n${PETER_SIG}`, 'malformed_note'],
    ['invalid UTF-8 (0xff)', Buffer.concat([Buffer.of(0xff), Buffer.from(`${GO_TEXT}\n${PETER_SIG}`)]), 'malformed_note'],
    ['a key name with a space (and no final newline)', `${GO_TEXT}\n— Bad Name ${PETER_SIG.slice('— PeterNeumann '.length, -1)}`, 'malformed_note'],
    ['a key name with a space', `${GO_TEXT}\n— Bad Name ${PETER_SIG.slice('— PeterNeumann '.length)}`, 'malformed_signature_line'],
    ['a line after the signatures', `${GO_TEXT}\n${PETER_SIG}Unexpected line.\n`, 'malformed_signature_line'],
    // More of the spec's rules.
    ['a hyphen instead of the em dash', `${GO_TEXT}\n-${PETER_SIG.slice(1)}`, 'malformed_signature_line'],
    ['an en dash (U+2013) instead of the em dash', `${GO_TEXT}\n\u2013${PETER_SIG.slice(1)}`, 'malformed_signature_line'],
    ['no space after the em dash', `${GO_TEXT}\n—${PETER_SIG.slice(2)}`, 'malformed_signature_line'],
    ['two spaces after the em dash', `${GO_TEXT}\n— ${PETER_SIG.slice(1)}`, 'malformed_signature_line'],
    ['no signature after the name', `${GO_TEXT}\n— PeterNeumann\n`, 'malformed_signature_line'],
    ['an empty signature', `${GO_TEXT}\n— PeterNeumann \n`, 'malformed_signature_line'],
    ['a non-base64 signature', `${GO_TEXT}\n— PeterNeumann x08go/ZJkuBS9UG!\n`, 'malformed_signature_line'],
    ['unpadded base64', `${GO_TEXT}\n${PETER_SIG.replace('AM=\n', 'AM\n')}`, 'malformed_signature_line'],
    ['a key ID and no signature', `${GO_TEXT}\n— PeterNeumann x08gow==\n`, 'malformed_signature_line'],
    ['a name with a plus', `${GO_TEXT}\n— Peter+Neumann ${PETER_SIG.slice('— PeterNeumann '.length)}`, 'malformed_signature_line'],
    ['a space after the signature', `${GO_TEXT}\n${PETER_SIG.slice(0, -1)} \n`, 'malformed_signature_line'],
    ['a blank line after the signatures', `${GO_TEXT}\n${PETER_SIG}\n`, 'malformed_note'],
    ['CRLF line endings', `${GO_TEXT.replaceAll('\n', '\r\n')}\r\n${PETER_SIG.replace('\n', '\r\n')}`, 'malformed_note'],
    ['a tab', `a\tb\n\n${PETER_SIG}`, 'malformed_note'],
    ['a lone surrogate', `\ud800\n\n${PETER_SIG}`, 'malformed_note'],
    ['an empty note', '', 'malformed_note'],
  ]
  it.each(cases)('%s', (_, note, code) => {
    expect(codeOf(() => openNote(note, [peter]))).toBe(code)
  })

  it('reads bytes as it reads text', () => {
    const opened = openNote(utf8(`${GO_TEXT}\n${PETER_SIG}`), [peter])
    expect(opened.text).toBe(GO_TEXT)
    expect(opened.signatures[0]!.verified).toBe(true)
  })

  it('never throws anything but NoteFormatError on mangled notes', () => {
    const note = `${GO_TEXT}\n${PETER_SIG}${ENOCH_SIG}`
    let seed = 1
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31)
    const alphabet = ['\n', '—', ' ', '+', '=', 'A', '\u0000', '\ud800', '']
    for (let i = 0; i < 2000; i++) {
      const at = next() % note.length
      const mangled = note.slice(0, at) + alphabet[next() % alphabet.length]! + note.slice(at + (next() % 3))
      expect(['no error', 'malformed_note', 'malformed_signature_line', 'bad_signature', 'unverified_note', 'too_many_signatures']).toContain(
        codeOf(() => openNote(mangled, [peter, enoch])),
      )
    }
  })
})

describe('signNote', () => {
  it.each([
    ['one line', 'hello\n'],
    ['only a newline', '\n'],
    ['blank lines inside', 'a\n\nb\n\n\nc\n'],
    ['ending in a blank line', 'a\n\n'],
    ['a line that looks like a signature', `a\n\n${PETER_SIG}`],
    ['unicode', 'ünïcödé — ✓ 🎉\n'],
  ])('round-trips %s with three signers', (_, text) => {
    const signers = [signer(1), signer(2), signer(3, 'log3.example/ü')]
    const note = signNote(text, signers)
    expect(note.startsWith(`${text}\n— log1.example/a `)).toBe(true)
    const opened = openNote(note, signers.map(verifierOf))
    expect(opened.text).toBe(text)
    expect(opened.signatures.map((s) => [s.name, s.verified])).toEqual(signers.map((s) => [s.name, true]))
  })

  it.each([
    ['a text without its final newline', 'abc', [signer(1)], 'invalid_text'],
    ['an empty text', '', [signer(1)], 'invalid_text'],
    ['a control character', 'a\rb\n', [signer(1)], 'invalid_text'],
    ['a lone surrogate', '\udc00\n', [signer(1)], 'invalid_text'],
    ['no signers', 'a\n', [], 'no_signatures'],
    ['a name with a space', 'a\n', [signer(1, 'bad name')], 'invalid_name'],
    ['a name with a plus', 'a\n', [signer(1, 'a+b')], 'invalid_name'],
    ['an empty name', 'a\n', [signer(1, '')], 'invalid_name'],
    ['a short seed', 'a\n', [{ name: 'a', seed: new Uint8Array(31) }], 'invalid_key'],
    ['the same signer twice', 'a\n', [signer(1), signer(1)], 'duplicate_signer'],
    ['101 signers', 'a\n', Array.from({ length: 101 }, (_, i) => signer(1, `s${i}`)), 'too_many_signatures'],
  ] as [string, string, NoteSigner[], string][])('refuses %s', (_, text, signers, code) => {
    expect(codeOf(() => signNote(text, signers))).toBe(code)
  })
})

describe('addNoteSignatures', () => {
  const base = signNote('tree\n', [signer(1)])
  const extra = signNote('tree\n', [signer(2), signer(3)]).slice('tree\n\n'.length)

  it.each([
    ['a response body', extra],
    ['lines one by one', extra.split('\n').filter((l) => l !== '')],
    ['lines with their newlines', extra.split(/(?<=\n)/)],
  ])('appends %s, keeping the note valid', (_, lines) => {
    const note = addNoteSignatures(base, lines)
    expect(note).toBe(base + extra)
    expect(openNote(note, [signer(1), signer(2), signer(3)].map(verifierOf)).signatures.map((s) => s.verified)).toEqual([true, true, true])
  })

  it('skips lines the note already has, and adds nothing for nothing', () => {
    expect(addNoteSignatures(base, base.slice('tree\n\n'.length))).toBe(base)
    expect(addNoteSignatures(base, '')).toBe(base)
    expect(addNoteSignatures(base, [])).toBe(base)
    expect(addNoteSignatures(base, extra + extra)).toBe(base + extra)
  })

  it.each([
    ['a body without its final newline', extra.slice(0, -1), 'malformed_signature_line'],
    ['a line without the em dash', ['- log2.example/a AAAAAAA='], 'malformed_signature_line'],
    ['two lines in one', [extra.slice(0, -1)], 'malformed_signature_line'],
    ['a blank line', `\n${extra}`, 'malformed_signature_line'],
    ['a control character', ['— a AAAAAAA=\r'], 'malformed_signature_line'],
    ['more than 100 lines in all', Array.from({ length: 100 }, (_, i) => `— w${i} AAAAAAA=`), 'too_many_signatures'],
  ] as [string, string | string[], string][])('refuses %s', (_, lines, code) => {
    expect(codeOf(() => addNoteSignatures(base, lines))).toBe(code)
  })

  it('refuses to add to a malformed note', () => {
    expect(codeOf(() => addNoteSignatures('tree\n', extra))).toBe('malformed_note')
  })
})
