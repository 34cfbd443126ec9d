import { describe, expect, it } from 'vitest'
import { addNoteSignatures, ed25519NoteVerifier, encodeVerifierKey, NoteFormatError, noteSignerPublicKey, signNote } from './signed-note.js'
import { checkpointBody } from './tlog-checkpoint.js'
import { cosignCheckpoint, cosignerVerifierKey, encodeCosignerKey } from './tlog-cosignature.js'
import { parseTlogPolicy, PolicyFormatError, policySatisfied, verifiedPolicyWitnesses, verifyCheckpointWithPolicy } from './tlog-policy.js'

const log = { name: 'example.com/log', seed: new Uint8Array(32).fill(1) }
const LOG_VKEY = encodeVerifierKey(log.name, noteSignerPublicKey(log))
const witness = (n: number) => ({ name: `w${n}.example`, seed: new Uint8Array(32).fill(10 + n) })
const W = Array.from({ length: 7 }, (_, i) => cosignerVerifierKey(witness(i)))

/** c2sp.org/tlog-policy's example, keys filled in. */
const SPEC_POLICY = `log ${LOG_VKEY}

witness X1 ${W[1]}
witness X2 ${W[2]}
witness X3 ${W[3]}
group X-witnesses 2 X1 X2 X3

witness Y1 ${W[4]}
witness Y2 ${W[5]}
witness Y3 ${W[6]}
group Y-witnesses any Y1 Y2 Y3

group X-and-Y all X-witnesses Y-witnesses
quorum X-and-Y
`

const failure = (text: string): [string, number | null] | 'no error' => {
  try {
    parseTlogPolicy(text)
  } catch (error) {
    if (error instanceof PolicyFormatError) return [error.code, error.line]
    throw error
  }
  return 'no error'
}

describe('the spec example', () => {
  const policy = parseTlogPolicy(SPEC_POLICY)

  it('parses', () => {
    expect(policy.logs.map((l) => [l.key.name, l.key.type, l.url, l.line])).toEqual([[log.name, 0x01, null, 1]])
    expect([...policy.witnesses.keys()]).toEqual(['X1', 'X2', 'X3', 'Y1', 'Y2', 'Y3'])
    expect(policy.witnesses.get('Y1')).toMatchObject({ name: 'Y1', url: null, line: 8, key: { name: 'w4.example', type: 0x04 } })
    expect([...policy.groups.values()].map((g) => [g.name, g.threshold, g.members])).toEqual([
      ['X-witnesses', 2, ['X1', 'X2', 'X3']],
      ['Y-witnesses', 1, ['Y1', 'Y2', 'Y3']],
      ['X-and-Y', 2, ['X-witnesses', 'Y-witnesses']],
    ])
    expect(policy.quorum).toBe('X-and-Y')
  })

  it.each([
    [[], false],
    [['X1', 'X2'], false],
    [['Y1', 'Y2', 'Y3'], false],
    [['X1', 'Y1'], false],
    [['X1', 'X2', 'Y1'], true],
    [['X2', 'X3', 'Y3'], true],
    [['X1', 'X2', 'X3', 'Y1', 'Y2', 'Y3'], true],
    // Group names and names the policy does not know witness nothing.
    [['X-witnesses', 'Y-witnesses'], false],
    [['X1', 'X2', 'Y4'], false],
  ])('quorum with %j: %s', (names, want) => {
    expect(policySatisfied(policy, new Set(names))).toBe(want)
  })
})

describe('syntax', () => {
  it('takes comments, blank lines, tabs, surrounding whitespace, URLs and a last line without its newline', () => {
    const policy = parseTlogPolicy(
      `# a policy\n\n  \t\n\tlog \t ${LOG_VKEY}   https://log.example/  \n   # indented comment\nwitness A ${W[1]} https://a.example/\nquorum A`,
    )
    expect(policy.logs[0]!.url).toBe('https://log.example/')
    expect(policy.witnesses.get('A')!.url).toBe('https://a.example/')
    expect(policySatisfied(policy, new Set(['A']))).toBe(true)
    expect(policySatisfied(policy, new Set())).toBe(false)
  })

  it('`quorum none` needs no witness, and no log is needed either', () => {
    const policy = parseTlogPolicy('quorum none\n')
    expect(policy.logs).toEqual([])
    expect(policySatisfied(policy, new Set())).toBe(true)
  })

  it('keeps names opaque: K and the Kelvin sign are two names', () => {
    const policy = parseTlogPolicy(`witness K ${W[1]}\nwitness \u212a ${W[2]}\ngroup both all K \u212a\nquorum both\n`)
    expect(policySatisfied(policy, new Set(['K']))).toBe(false)
    expect(policySatisfied(policy, new Set(['K', '\u212a']))).toBe(true)
  })

  it('lets witness and log lines follow the quorum', () => {
    expect(parseTlogPolicy(`witness A ${W[1]}\nquorum A\nwitness B ${W[2]}\nlog ${LOG_VKEY}\n`).witnesses.size).toBe(2)
  })
})

describe('parseTlogPolicy refuses, naming the line', () => {
  const a = `witness A ${W[1]}\n`
  const ab = `${a}witness B ${W[2]}\n`
  it.each([
    ['an unknown keyword', 'witnesses A x\nquorum none\n', 'unknown_keyword', 1],
    ['a keyword in capitals', 'Quorum none\n', 'unknown_keyword', 1],
    ['no quorum', a, 'missing_quorum', null],
    ['two quorum lines', `${a}quorum A\nquorum none\n`, 'duplicate_quorum', 3],
    ['a quorum of an undefined name', 'quorum A\n', 'undefined_name', 1],
    ['a quorum of a name defined later', `quorum G\n${a}group G any A\n`, 'undefined_name', 1],
    ['a quorum line with two names', `${ab}quorum A B\n`, 'malformed_line', 3],
    ['a group member defined later', `group G any A\n${a}quorum G\n`, 'undefined_name', 1],
    ['a group of itself', `${a}group G any G\nquorum G\n`, 'undefined_name', 2],
    ['none as a member', `${a}group G any A none\nquorum G\n`, 'none_as_member', 2],
    ['a member listed twice', `${a}group G any A A\nquorum G\n`, 'duplicate_member', 2],
    ['a threshold of 0', `${a}group G 0 A\nquorum G\n`, 'invalid_threshold', 2],
    ['a threshold above n', `${ab}group G 3 A B\nquorum G\n`, 'invalid_threshold', 3],
    ['a threshold with a leading zero', `${ab}group G 02 A B\nquorum G\n`, 'invalid_threshold', 3],
    ['a negative threshold', `${a}group G -1 A\nquorum G\n`, 'invalid_threshold', 2],
    ['a threshold word in capitals', `${a}group G ANY A\nquorum G\n`, 'invalid_threshold', 2],
    ['a group without members', `${a}group G any\nquorum G\n`, 'malformed_line', 2],
    ['a witness named none', `witness none ${W[1]}\nquorum none\n`, 'reserved_name', 1],
    ['a group named none', `${a}group none any A\nquorum none\n`, 'reserved_name', 2],
    ['a witness defined twice', `${a}witness A ${W[2]}\nquorum A\n`, 'duplicate_name', 2],
    ['a group with a witness name', `${a}group A any A\nquorum A\n`, 'duplicate_name', 2],
    ['one witness key under two names', `${a}witness B ${W[1]}\nquorum A\n`, 'duplicate_witness', 2],
    ['one witness key under two key names', `${a}witness B ${encodeCosignerKey('other.example', noteSignerPublicKey(witness(1)))}\nquorum A\n`, 'duplicate_witness', 2],
    ['one log listed twice', `log ${LOG_VKEY}\nlog ${LOG_VKEY} https://x/\nquorum none\n`, 'duplicate_log', 2],
    ['a witness with an Ed25519 note key', `witness A ${LOG_VKEY}\nquorum A\n`, 'invalid_vkey', 1],
    ['a malformed vkey', `log ${LOG_VKEY.replace(/.$/, '!')}\nquorum none\n`, 'invalid_vkey', 1],
    ['a log line without a key', 'log\nquorum none\n', 'malformed_line', 1],
    ['a witness line without a key', 'witness A\nquorum none\n', 'malformed_line', 1],
    ['a trailing comment (comments are whole lines)', `witness A ${W[1]} https://a/ # primary\nquorum A\n`, 'malformed_line', 1],
    ['a carriage return', `quorum none\r\n`, 'invalid_character', 1],
    ['DEL', `# \u007f\nquorum none\n`, 'invalid_character', 1],
    ['a NUL in a comment', `quorum none\n#\u0000\n`, 'invalid_character', 2],
  ] as [string, string, string, number | null][])('%s', (_, text, code, line) => {
    expect(failure(text)).toEqual([code, line])
  })

  it('says which line in the message', () => {
    expect(() => parseTlogPolicy('quorum none\nbogus\n')).toThrow('policy line 2: unknown keyword "bogus"')
  })
})

describe('verifying a checkpoint under a policy', () => {
  const policy = parseTlogPolicy(SPEC_POLICY)
  const body = checkpointBody({ origin: log.name, size: 10, root: new Uint8Array(32).fill(3) })
  const signed = signNote(body, [log])
  const cosign = (...ns: number[]) => addNoteSignatures(signed, ns.map((n) => cosignCheckpoint(body, witness(n), 1700000000 + n)))
  const codeOf = (f: () => unknown) => {
    try {
      f()
    } catch (error) {
      if (error instanceof NoteFormatError) return error.code
      throw error
    }
    return 'no error'
  }

  it('accepts a quorum, naming the witnesses by their policy names', () => {
    const result = verifyCheckpointWithPolicy(policy, cosign(1, 3, 5))
    expect(result.checkpoint.size).toBe(10n)
    expect([...result.witnesses].sort()).toEqual(['X1', 'X3', 'Y2'])
  })

  it.each([
    ['too few X witnesses', cosign(1, 5), 'quorum_not_met'],
    ['no Y witness', cosign(1, 2, 3), 'quorum_not_met'],
    ['only the log', signed, 'quorum_not_met'],
    ['a witness outside the policy', cosign(0, 1, 2), 'quorum_not_met'],
    ['cosignatures without the log signature', cosign(1, 2, 4).replace(/^— example\.com\/log .*\n/m, ''), 'log_unverified'],
    ['a changed cosignature', cosign(1, 2, 4).replace(/(— w4\.example \S{20})(\S)/, (_, a: string, c: string) => a + (c === 'A' ? 'B' : 'A')), 'bad_signature'],
  ])('refuses %s', (_, note, code) => {
    expect(codeOf(() => verifyCheckpointWithPolicy(policy, note))).toBe(code)
  })

  it("refuses a checkpoint whose origin is not the log's key name", () => {
    const other = checkpointBody({ origin: 'example.com/other', size: 10, root: new Uint8Array(32) })
    const note = addNoteSignatures(signNote(other, [log]), [1, 2, 4].map((n) => cosignCheckpoint(other, witness(n), 1)))
    expect(codeOf(() => verifyCheckpointWithPolicy(policy, note))).toBe('log_unverified')
  })

  it('takes the log from context when the policy lists none', () => {
    const bare = parseTlogPolicy(SPEC_POLICY.replace(/^log .*$/m, ''))
    const note = cosign(1, 2, 6)
    expect(codeOf(() => verifyCheckpointWithPolicy(bare, note))).toBe('log_unverified')
    expect(verifyCheckpointWithPolicy(bare, note, [ed25519NoteVerifier(LOG_VKEY)]).witnesses.size).toBe(3)
  })

  it('verifiedPolicyWitnesses counts only verified lines of policy witnesses', () => {
    const sigs = [
      { name: 'w1.example', keyId: policy.witnesses.get('X1')!.key.keyId, bytes: new Uint8Array(), line: '', verified: true, verifier: null },
      { name: 'w2.example', keyId: policy.witnesses.get('X2')!.key.keyId, bytes: new Uint8Array(), line: '', verified: null, verifier: null },
      { name: 'w3.example', keyId: Uint8Array.of(0, 0, 0, 0), bytes: new Uint8Array(), line: '', verified: true, verifier: null },
    ]
    expect([...verifiedPolicyWitnesses(policy, sigs)]).toEqual(['X1'])
  })
})
