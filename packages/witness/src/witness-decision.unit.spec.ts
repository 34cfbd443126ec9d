import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  checkpointBody,
  consistencyProofFromTiles,
  cosignatureTimestamp,
  cosignatureVerifier,
  cosignerVerifierKey,
  edgeAppend,
  EMPTY_TREE_EDGE,
  ed25519NoteVerifier,
  encodeVerifierKey,
  encodeCosignerKey,
  noteSignerPublicKey,
  openNote,
  signNote,
  type TileReader,
  treeRootFromTiles,
  type TreeEdge,
} from '@hookledger/ledger'
import { parseAddCheckpointRequest, type AddCheckpointRequest } from './add-checkpoint-request.js'
import { CONTENT_TYPE_TLOG_SIZE, decideAddCheckpoint, type WitnessLogState, witnessKnownLogs } from './witness-decision.js'

const sha256 = (...parts: (Uint8Array | string)[]) => {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}
const leaf = (tag: string, i: number) => sha256(Uint8Array.of(0), `${tag} ${i}`)

/** A log's tree in memory: its tiles, from what edgeAppend stored, served for any size up to the current one. */
class MemoryTree {
  private readonly byHeight = new Map<number, Uint8Array[]>()
  private edge: TreeEdge = EMPTY_TREE_EDGE
  constructor(tag: string, size: number) {
    this.append(Array.from({ length: size }, (_, i) => leaf(tag, i)))
  }
  append(leaves: Uint8Array[]): void {
    const grown = edgeAppend(this.edge, leaves)
    for (const { height, index, hash } of grown.stored) {
      const row = this.byHeight.get(height) ?? []
      row[index] = hash
      this.byHeight.set(height, row)
    }
    this.edge = grown.edge
  }
  readonly reader: TileReader = async (tiles) => tiles.map(({ level, index, width }) => Buffer.concat((this.byHeight.get(8 * level) ?? []).slice(256 * index, 256 * index + width)))
  root = (size: number) => treeRootFromTiles(size, this.reader)
  proof = (from: number, to: number) => consistencyProofFromTiles(from, to, this.reader)
}

const ORIGIN = 'example.com/log'
const LOG = { name: ORIGIN, seed: new Uint8Array(32).fill(1) }
const LOG_SECOND_KEY = { name: ORIGIN, seed: new Uint8Array(32).fill(2) }
const IMPOSTOR = { name: ORIGIN, seed: new Uint8Array(32).fill(3) }
const OTHER_LOG = { name: 'example.org/other', seed: new Uint8Array(32).fill(4) }
const WITNESS = { name: 'witness.example/w1', seed: new Uint8Array(32).fill(5) }
const vkeyOf = (signer: { name: string; seed: Uint8Array }) => encodeVerifierKey(signer.name, noteSignerPublicKey(signer))
const LOGS = witnessKnownLogs([vkeyOf(LOG), vkeyOf(LOG_SECOND_KEY)])
const NOW = new Date('2026-12-03T10:00:00.900Z')
const NOW_SECONDS = BigInt(Math.floor(NOW.getTime() / 1000))
const EMPTY_ROOT = sha256()

const TREE = new MemoryTree('entry', 300)
const FORK = new MemoryTree('forged', 300)

const note = (size: number, root: Uint8Array, signers = [LOG], origin = ORIGIN) => signNote(checkpointBody({ origin, size, root }), signers)

function request(oldSize: number | bigint, proof: Uint8Array[], checkpointNote: string): AddCheckpointRequest {
  const body = `old ${oldSize}\n${proof.map((h) => Buffer.from(h).toString('base64') + '\n').join('')}\n${checkpointNote}`
  const parsed = parseAddCheckpointRequest(body)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.request
}

const stateAt = async (size: number, tree = TREE): Promise<WitnessLogState> => ({ size, root: await tree.root(size) })

/** The signature line of `signed` with one byte of its signature (not its key ID) flipped. */
function corruptSignature(signed: string): string {
  const split = signed.lastIndexOf('\n\n') + 2
  const [dash, name, b64] = signed.slice(split, -1).split(' ') as [string, string, string]
  const raw = Buffer.from(b64, 'base64')
  raw[10] = raw[10]! ^ 0x01
  return `${signed.slice(0, split)}${dash} ${name} ${raw.toString('base64')}\n`
}

interface Case {
  readonly name: string
  readonly state: () => Promise<WitnessLogState | null>
  readonly request: () => Promise<AddCheckpointRequest>
  readonly status: number
  readonly reason?: string
  readonly body?: string
  readonly evidence?: boolean
}

const cases: Case[] = [
  // 200
  { name: 'the first checkpoint (old 0, never cosigned)', state: async () => null, request: async () => request(0, [], note(20, await TREE.root(20))), status: 200 },
  { name: 'growth with a valid proof', state: () => stateAt(20), request: async () => request(20, await TREE.proof(20, 300), note(300, await TREE.root(300))), status: 200 },
  { name: 'growth from a power-of-two size', state: () => stateAt(256), request: async () => request(256, await TREE.proof(256, 257), note(257, await TREE.root(257))), status: 200 },
  { name: 'growth by one leaf from size 1', state: () => stateAt(1), request: async () => request(1, await TREE.proof(1, 2), note(2, await TREE.root(2))), status: 200 },
  { name: 'the same checkpoint again', state: () => stateAt(20), request: async () => request(20, [], note(20, await TREE.root(20))), status: 200 },
  { name: 'an empty tree with the empty root', state: async () => null, request: async () => request(0, [], note(0, EMPTY_ROOT)), status: 200 },
  { name: 'growth from a stored empty tree', state: async () => ({ size: 0, root: EMPTY_ROOT }), request: async () => request(0, [], note(5, await TREE.root(5))), status: 200 },
  { name: 'a checkpoint signed by the log\'s second key', state: async () => null, request: async () => request(0, [], note(7, await TREE.root(7), [LOG_SECOND_KEY])), status: 200 },
  { name: 'a checkpoint with an unknown key\'s signature beside the log\'s', state: async () => null, request: async () => request(0, [], note(7, await TREE.root(7), [IMPOSTOR, LOG])), status: 200 },
  { name: 'a checkpoint with extension lines', state: async () => null, request: async () => request(0, [], signNote(checkpointBody({ origin: ORIGIN, size: 3, root: await TREE.root(3), extensions: ['ext line'] }), [LOG])), status: 200 },
  // 404
  { name: 'an unknown origin', state: async () => null, request: async () => request(0, [], note(5, await TREE.root(5), [OTHER_LOG], OTHER_LOG.name)), status: 404, reason: 'unknown_origin' },
  // 403
  { name: 'a checkpoint signed by another key under the origin\'s name', state: async () => null, request: async () => request(0, [], note(5, await TREE.root(5), [IMPOSTOR])), status: 403, reason: 'unverified_checkpoint' },
  { name: 'a trusted key\'s signature that fails', state: async () => null, request: async () => request(0, [], corruptSignature(note(5, await TREE.root(5)))), status: 403, reason: 'unverified_checkpoint' },
  { name: 'a failing trusted signature beside a valid one', state: async () => null, request: async () => request(0, [], corruptSignature(note(5, await TREE.root(5), [LOG_SECOND_KEY, LOG]))), status: 403, reason: 'unverified_checkpoint' },
  { name: 'a bad signature even when old is wrong too (403 before 409)', state: () => stateAt(20), request: async () => request(3, [], note(25, await TREE.root(25), [IMPOSTOR])), status: 403, reason: 'unverified_checkpoint' },
  // 400
  { name: 'an old size above the checkpoint size', state: () => stateAt(20), request: async () => request(21, [], note(20, await TREE.root(20))), status: 400, reason: 'old_size_too_large' },
  { name: 'a checkpoint smaller than the stored one, old = stored', state: () => stateAt(20), request: async () => request(20, [], note(10, await TREE.root(10))), status: 400, reason: 'old_size_too_large' },
  // 409
  { name: 'an old size below the stored one', state: () => stateAt(20), request: async () => request(10, await TREE.proof(10, 30), note(30, await TREE.root(30))), status: 409, reason: 'old_size_mismatch', body: '20\n' },
  { name: 'an old size above the stored one', state: () => stateAt(20), request: async () => request(25, await TREE.proof(25, 30), note(30, await TREE.root(30))), status: 409, reason: 'old_size_mismatch', body: '20\n' },
  { name: 'a non-zero old size never cosigned', state: async () => null, request: async () => request(10, await TREE.proof(10, 30), note(30, await TREE.root(30))), status: 409, reason: 'old_size_mismatch', body: '0\n' },
  { name: 'old 0 when a size is stored', state: () => stateAt(20), request: async () => request(0, [], note(30, await TREE.root(30))), status: 409, reason: 'old_size_mismatch', body: '20\n' },
  { name: 'a checkpoint smaller than the stored one, old = its size', state: () => stateAt(20), request: async () => request(10, [], note(10, await TREE.root(10))), status: 409, reason: 'old_size_mismatch', body: '20\n' },
  { name: 'an old size past 2^53', state: () => stateAt(20), request: async () => request(2n ** 60n, [], note(20, await TREE.root(20))), status: 400, reason: 'old_size_too_large' },
  // 422
  { name: 'a size-0 checkpoint whose root is not the empty tree\'s', state: async () => null, request: async () => request(0, [], note(0, await TREE.root(1))), status: 422, reason: 'bad_empty_tree', evidence: true },
  { name: 'a proof with old size 0', state: async () => null, request: async () => request(0, [await TREE.root(1)], note(5, await TREE.root(5))), status: 422, reason: 'proof_with_old_size_zero', evidence: true },
  { name: 'the stored size with another root', state: () => stateAt(20), request: async () => request(20, [], note(20, await FORK.root(20))), status: 422, reason: 'root_mismatch', evidence: true },
  { name: 'the stored size with a non-empty proof', state: () => stateAt(20), request: async () => request(20, [await TREE.root(3)], note(20, await TREE.root(20))), status: 422, reason: 'bad_consistency_proof', evidence: true },
  { name: 'a rewritten history (another tree, its own valid proof)', state: () => stateAt(20), request: async () => request(20, await FORK.proof(20, 300), note(300, await FORK.root(300))), status: 422, reason: 'bad_consistency_proof', evidence: true },
  { name: 'a proof for other sizes', state: () => stateAt(20), request: async () => request(20, await TREE.proof(21, 300), note(300, await TREE.root(300))), status: 422, reason: 'bad_consistency_proof', evidence: true },
  { name: 'a proof with a hash flipped', state: () => stateAt(20), request: async () => request(20, (await TREE.proof(20, 300)).map((h, i) => (i === 0 ? h.map((b, j) => (j === 0 ? b ^ 1 : b)) : h)), note(300, await TREE.root(300))), status: 422, reason: 'bad_consistency_proof', evidence: true },
  { name: 'a truncated proof', state: () => stateAt(20), request: async () => request(20, (await TREE.proof(20, 300)).slice(0, -1), note(300, await TREE.root(300))), status: 422, reason: 'bad_consistency_proof', evidence: true },
  { name: 'an empty proof for growth', state: () => stateAt(20), request: async () => request(20, [], note(300, await TREE.root(300))), status: 422, reason: 'bad_consistency_proof', evidence: true },
  { name: 'a valid proof to a checkpoint with another root', state: () => stateAt(20), request: async () => request(20, await TREE.proof(20, 300), note(300, await FORK.root(300))), status: 422, reason: 'bad_consistency_proof', evidence: true },
]

describe('decideAddCheckpoint', () => {
  it.each(cases)('$status: $name', async (c) => {
    const state = await c.state()
    const req = await c.request()
    const answer = decideAddCheckpoint({ logs: LOGS, state, request: req, witness: WITNESS, now: NOW })
    expect(answer.status).toBe(c.status)
    if (answer.status === 200) {
      // The cosignature verifies on the checkpoint, with the witness's vkey, timestamped now.
      expect(answer.contentType).toMatch(/^text\/plain/)
      expect(answer.body).toMatch(/^\u2014 witness\.example\/w1 [A-Za-z0-9+/=]+\n$/)
      const cosigned = openNote(req.note + answer.body, [cosignatureVerifier(cosignerVerifierKey(WITNESS))])
      const line = cosigned.signatures.find((s) => s.verified === true)!
      expect(cosignatureTimestamp(line)).toBe(NOW_SECONDS)
      expect(answer.state.size).toBe(Number(req.checkpoint.size))
      expect(Buffer.from(answer.state.root)).toEqual(Buffer.from(req.checkpoint.root))
      // The kept note: the log's verified signature(s) and the cosignature, nothing unknown.
      const kept = openNote(answer.state.checkpoint!, [...LOGS.get(ORIGIN)!, cosignatureVerifier(cosignerVerifierKey(WITNESS))])
      expect(kept.signatures.every((s) => s.verified === true)).toBe(true)
      expect(kept.signatures.at(-1)!.line + '\n').toBe(answer.body)
    } else {
      expect(answer.reason).toBe(c.reason)
      expect(answer.evidence).toBe(c.evidence ?? false)
      if (answer.status === 409) expect(answer.contentType).toBe(CONTENT_TYPE_TLOG_SIZE)
      else expect(answer.contentType).toMatch(/^text\/plain/)
      if (c.body !== undefined) expect(answer.body).toBe(c.body)
      expect(answer.body.endsWith('\n')).toBe(true)
    }
  })

  it('a checkpoint size past 2^53 that the log did sign is refused 422, never cosigned', async () => {
    const root = await TREE.root(300)
    const req = request(20, await TREE.proof(20, 300), signNote(`${ORIGIN}\n9007199254740993\n${Buffer.from(root).toString('base64')}\n`, [LOG]))
    const answer = decideAddCheckpoint({ logs: LOGS, state: await stateAt(20), request: req, witness: WITNESS, now: NOW })
    expect(answer).toMatchObject({ status: 422, reason: 'bad_consistency_proof' })
  })

  it('refuses to cosign with a clock at the epoch (the timestamp must not be 0), as its own trouble', async () => {
    const answer = decideAddCheckpoint({ logs: LOGS, state: null, request: request(0, [], note(3, await TREE.root(3))), witness: WITNESS, now: new Date(999) })
    expect(answer).toMatchObject({ status: 500, reason: 'clock_before_epoch' })
  })

  it('the state it returns is the checkpoint\'s, and the 200 does not depend on the state\'s note', async () => {
    const first = decideAddCheckpoint({ logs: LOGS, state: null, request: request(0, [], note(20, await TREE.root(20))), witness: WITNESS, now: NOW })
    if (first.status !== 200) throw new Error('expected 200')
    const next = decideAddCheckpoint({ logs: LOGS, state: first.state, request: request(20, await TREE.proof(20, 40), note(40, await TREE.root(40))), witness: WITNESS, now: NOW })
    expect(next.status).toBe(200)
  })
})

describe('witnessKnownLogs', () => {
  it('groups keys by origin (the key name) and accepts Ed25519 and cosignature-type log keys', () => {
    const logs = witnessKnownLogs([vkeyOf(LOG), vkeyOf(OTHER_LOG), vkeyOf(LOG_SECOND_KEY), encodeCosignerKey('example.net/c', noteSignerPublicKey(LOG))])
    expect([...logs.keys()]).toEqual([ORIGIN, OTHER_LOG.name, 'example.net/c'])
    expect(logs.get(ORIGIN)).toHaveLength(2)
    expect(logs.get(ORIGIN)![0]!.keyId).toEqual(ed25519NoteVerifier(vkeyOf(LOG)).keyId)
  })

  it('refuses a key given twice and a malformed vkey', () => {
    expect(() => witnessKnownLogs([vkeyOf(LOG), vkeyOf(LOG)])).toThrow(/given twice/)
    expect(() => witnessKnownLogs(['not a vkey'])).toThrow()
    expect(() => witnessKnownLogs([vkeyOf(LOG).slice(0, -2)])).toThrow()
  })
})
