import { sameBytes } from './bytes.js'
import {
  NOTE_TYPE_COSIGNATURE_V1,
  NOTE_TYPE_ED25519,
  NOTE_TYPE_MLDSA44_COSIGNATURE,
  NoteFormatError,
  parseVerifierKey,
  type VerifierKey,
} from './note-keys.js'
import { ed25519NoteVerifier, type NoteSignature, type NoteVerifier } from './signed-note.js'
import { openCheckpoint, type TlogCheckpoint } from './tlog-checkpoint.js'
import { cosignatureVerifier } from './tlog-cosignature.js'

/**
 * Trust policies (c2sp.org/tlog-policy): which logs are accepted and which witness quorum must
 * cosign a checkpoint. One item per line, fields separated by spaces and tabs:
 *
 *     log <vkey> [<url>]
 *     witness <name> <vkey> [<url>]
 *     group <name> <k|any|all> <member>…
 *     quorum <name|none>
 *
 * Blank lines and lines whose first non-blank character is `#` are ignored. A group or the
 * quorum names only witnesses and groups defined on lines before it, so definitions form a DAG
 * in file order and the quorum is evaluated in that order, with no recursion to overflow.
 * Names are compared as exact strings (no Unicode normalisation), as the spec's opaque octets.
 * The text is taken already decoded; a last line without its newline is accepted.
 */

/** Log keys: plain Ed25519 notes, or cosignature-type keys (the checkpoint spec lets logs sign with those). */
const LOG_KEY_TYPES = [NOTE_TYPE_ED25519, NOTE_TYPE_COSIGNATURE_V1, NOTE_TYPE_MLDSA44_COSIGNATURE]
/** Witness keys make cosignatures. ML-DSA-44 ones are parsed but node:crypto (Node 20) cannot verify them. */
const WITNESS_KEY_TYPES = [NOTE_TYPE_COSIGNATURE_V1, NOTE_TYPE_MLDSA44_COSIGNATURE]

export interface PolicyLog {
  readonly key: VerifierKey
  readonly url: string | null
  readonly line: number
}

export interface PolicyWitness {
  readonly name: string
  readonly key: VerifierKey
  readonly url: string | null
  readonly line: number
}

export interface PolicyGroup {
  readonly name: string
  /** How many members must have witnessed (`any` = 1, `all` = every member). */
  readonly threshold: number
  readonly members: readonly string[]
  readonly line: number
}

export interface TlogPolicy {
  readonly logs: readonly PolicyLog[]
  readonly witnesses: ReadonlyMap<string, PolicyWitness>
  /** In definition order: each group's members are defined before it. */
  readonly groups: ReadonlyMap<string, PolicyGroup>
  /** A witness or group name, or `none`. */
  readonly quorum: string
}

/** A policy file that breaks the spec; `line` is 1-based (null when no single line is to blame). */
export class PolicyFormatError extends Error {
  readonly code: string
  readonly line: number | null
  constructor(code: string, line: number | null, message: string) {
    super(line === null ? message : `policy line ${line}: ${message}`)
    this.name = 'PolicyFormatError'
    this.code = code
    this.line = line
  }
}

export function parseTlogPolicy(text: string): TlogPolicy {
  const logs: PolicyLog[] = []
  const witnesses = new Map<string, PolicyWitness>()
  const groups = new Map<string, PolicyGroup>()
  let quorum: string | null = null
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n')
  lines.forEach((raw, i) => {
    const line = i + 1
    const fail = (code: string, why: string) => new PolicyFormatError(code, line, why)
    // Only tab and newline of the control characters; DEL neither.
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(raw)) throw fail('invalid_character', 'a control character other than tab')
    const fields = raw.split(/[ \t]+/).filter((f) => f !== '')
    if (fields.length === 0 || fields[0]!.startsWith('#')) return
    const [keyword, ...args] = fields as [string, ...string[]]
    const key = (vkey: string, types: number[]) => {
      try {
        return parseVerifierKey(vkey, types)
      } catch (error) {
        if (error instanceof NoteFormatError) throw fail('invalid_vkey', `${error.code}: ${error.message}`)
        throw error
      }
    }
    const defined = (name: string) => witnesses.has(name) || groups.has(name)
    const fresh = (name: string) => {
      if (name === 'none') throw fail('reserved_name', '"none" is predefined')
      if (defined(name)) throw fail('duplicate_name', `${name} is already defined`)
    }
    switch (keyword) {
      case 'log': {
        if (args.length < 1 || args.length > 2) throw fail('malformed_line', 'expected log <vkey> [<url>]')
        const parsed = key(args[0]!, LOG_KEY_TYPES)
        if (logs.some((l) => sameBytes(l.key.publicKey, parsed.publicKey))) throw fail('duplicate_log', 'a log with this public key is already listed')
        logs.push({ key: parsed, url: args[1] ?? null, line })
        return
      }
      case 'witness': {
        if (args.length < 2 || args.length > 3) throw fail('malformed_line', 'expected witness <name> <vkey> [<url>]')
        const [name, vkey, url] = args as [string, string, string?]
        fresh(name)
        const parsed = key(vkey, WITNESS_KEY_TYPES)
        if ([...witnesses.values()].some((w) => sameBytes(w.key.publicKey, parsed.publicKey))) throw fail('duplicate_witness', 'a witness with this public key is already listed')
        witnesses.set(name, { name, key: parsed, url: url ?? null, line })
        return
      }
      case 'group': {
        if (args.length < 3) throw fail('malformed_line', 'expected group <name> <k|any|all> <member>…')
        const [name, k, ...members] = args as [string, string, ...string[]]
        fresh(name)
        const seen = new Set<string>()
        for (const member of members) {
          if (member === 'none') throw fail('none_as_member', '"none" cannot be a group member')
          if (!defined(member)) throw fail('undefined_name', `${member} is not defined on an earlier line`)
          if (seen.has(member)) throw fail('duplicate_member', `${member} is listed twice`)
          seen.add(member)
        }
        const threshold = k === 'all' ? members.length : k === 'any' ? 1 : /^[1-9][0-9]*$/.test(k) ? Number(k) : NaN
        if (!(threshold >= 1 && threshold <= members.length)) throw fail('invalid_threshold', `threshold ${k} is not all, any, or a decimal in 1..${members.length}`)
        groups.set(name, { name, threshold, members, line })
        return
      }
      case 'quorum': {
        if (args.length !== 1) throw fail('malformed_line', 'expected quorum <name>')
        if (quorum !== null) throw fail('duplicate_quorum', 'a policy has exactly one quorum line')
        if (args[0] !== 'none' && !defined(args[0]!)) throw fail('undefined_name', `${args[0]} is not defined on an earlier line`)
        quorum = args[0]!
        return
      }
      default:
        throw fail('unknown_keyword', `unknown keyword ${JSON.stringify(keyword.slice(0, 40))}`)
    }
  })
  if (quorum === null) throw new PolicyFormatError('missing_quorum', null, 'a policy has exactly one quorum line')
  return { logs, witnesses, groups, quorum }
}

/** Whether witnesses named in `verified` (policy names, e.g. verifiedPolicyWitnesses) meet the quorum. */
export function policySatisfied(policy: TlogPolicy, verified: ReadonlySet<string>): boolean {
  if (policy.quorum === 'none') return true
  const witnessed = new Map<string, boolean>()
  for (const name of policy.witnesses.keys()) witnessed.set(name, verified.has(name))
  // Members precede their group, so one pass in definition order settles every group.
  for (const group of policy.groups.values()) {
    const count = group.members.filter((m) => witnessed.get(m) === true).length
    witnessed.set(group.name, count >= group.threshold)
  }
  return witnessed.get(policy.quorum) === true
}

/** Verifiers for the keys node:crypto can check: Ed25519 logs (0x01, 0x04) and cosignature/v1 witnesses. */
export function policyVerifiers(policy: TlogPolicy): { logs: NoteVerifier[]; witnesses: NoteVerifier[] } {
  const logs = policy.logs.flatMap(({ key }) =>
    key.type === NOTE_TYPE_ED25519 ? [ed25519NoteVerifier(key)] : key.type === NOTE_TYPE_COSIGNATURE_V1 ? [cosignatureVerifier(key)] : [],
  )
  const witnesses = [...policy.witnesses.values()].flatMap(({ key }) => (key.type === NOTE_TYPE_COSIGNATURE_V1 ? [cosignatureVerifier(key)] : []))
  return { logs, witnesses }
}

/** The policy names of the witnesses whose signature lines openNote verified. */
export function verifiedPolicyWitnesses(policy: TlogPolicy, signatures: readonly NoteSignature[]): Set<string> {
  const names = new Set<string>()
  for (const s of signatures) {
    if (s.verified !== true) continue
    for (const w of policy.witnesses.values()) if (w.key.name === s.name && sameBytes(w.key.keyId, s.keyId)) names.add(w.name)
  }
  return names
}

/**
 * Opens a checkpoint note under a policy: a listed log (or one of `extraLogs`, for a policy whose
 * logs are known from context) whose key name is the checkpoint's origin must have signed it
 * (`log_unverified`), and the verified witnesses must meet the quorum (`quorum_not_met`).
 * Throws NoteFormatError; returns the checkpoint and the policy names of who witnessed it.
 */
export function verifyCheckpointWithPolicy(
  policy: TlogPolicy,
  note: string | Uint8Array,
  extraLogs: readonly NoteVerifier[] = [],
): { checkpoint: TlogCheckpoint; witnesses: Set<string> } {
  const verifiers = policyVerifiers(policy)
  verifiers.logs.push(...extraLogs)
  const opened = openCheckpoint(note, [...verifiers.logs, ...verifiers.witnesses])
  const origin = opened.checkpoint.origin
  const logSigned = opened.signatures.some((s) => s.verified === true && s.name === origin && verifiers.logs.includes(s.verifier!))
  if (!logSigned) throw new NoteFormatError('log_unverified', `no signature of a policy log for origin ${JSON.stringify(origin.slice(0, 80))}`)
  const witnesses = verifiedPolicyWitnesses(policy, opened.signatures)
  if (!policySatisfied(policy, witnesses)) throw new NoteFormatError('quorum_not_met', 'the verified cosignatures do not meet the policy quorum')
  return { checkpoint: opened.checkpoint, witnesses }
}
