import { createHash } from 'node:crypto'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { serve, type ServerType } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Clock } from '@hookledger/core'
import {
  checkpointBody,
  consistencyProofFromTiles,
  cosignatureTimestamp,
  cosignatureVerifier,
  edgeAppend,
  edgeRoot,
  EMPTY_TREE_EDGE,
  ed25519NoteVerifier,
  encodeVerifierKey,
  noteSignerPublicKey,
  openNote,
  signNote,
  type TileReader,
  type TreeEdge,
} from '@hookledger/ledger'
import { createWitnessApp, type WitnessEvent } from './witness-app.js'
import { createWitnessKeyFile, readWitnessKeyFile, WitnessKeyFileError } from './witness-key-file.js'
import { openWitnessStateFile, originHash, type WitnessStateStore, WitnessStateError } from './witness-state-file.js'

const sha256 = (...parts: (Uint8Array | string)[]) => {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}

/** A log's tree: its tiles in memory (from edgeAppend), each size's root kept as it grew. */
class MemoryTree {
  private readonly byHeight = new Map<number, Uint8Array[]>()
  private edge: TreeEdge = EMPTY_TREE_EDGE
  private readonly roots = new Map<number, Uint8Array>([[0, edgeRoot(EMPTY_TREE_EDGE)]])
  constructor(private readonly tag: string) {}
  /** Grows the tree to `size` leaves, one leaf at a time so every size's root is known. */
  growTo(size: number): this {
    while (this.edge.size < size) {
      const grown = edgeAppend(this.edge, [sha256(Uint8Array.of(0), `${this.tag} ${this.edge.size}`)])
      for (const { height, index, hash } of grown.stored) {
        const row = this.byHeight.get(height) ?? []
        row[index] = hash
        this.byHeight.set(height, row)
      }
      this.edge = grown.edge
      this.roots.set(this.edge.size, edgeRoot(this.edge))
    }
    return this
  }
  private readonly reader: TileReader = async (tiles) =>
    tiles.map(({ level, index, width }) => Buffer.concat((this.byHeight.get(8 * level) ?? []).slice(256 * index, 256 * index + width)))
  root(size: number): Uint8Array {
    return this.roots.get(size)!
  }
  proof(from: number, to: number): Promise<Uint8Array[]> {
    return consistencyProofFromTiles(from, to, this.reader)
  }
}

const ORIGIN = 'example.com/hookledger-log'
const LOG = { name: ORIGIN, seed: sha256('log seed') }
const IMPOSTOR = { name: ORIGIN, seed: sha256('impostor seed') }
const STRANGER = { name: 'example.org/unknown', seed: sha256('stranger seed') }
const LOG_VKEY = encodeVerifierKey(ORIGIN, noteSignerPublicKey(LOG))

let clockSeconds = 1_800_000_000
const clock: Clock = { now: () => new Date(clockSeconds * 1000) }

const TREE = new MemoryTree('entry').growTo(600)
const FORK = new MemoryTree('rewritten').growTo(600)

const checkpointNote = (tree: MemoryTree, size: number, signer = LOG) => signNote(checkpointBody({ origin: signer.name, size, root: tree.root(size) }), [signer])
const body = (oldSize: number, proof: readonly Uint8Array[], note: string) => `old ${oldSize}\n${proof.map((h) => Buffer.from(h).toString('base64') + '\n').join('')}\n${note}`

interface Running {
  readonly url: string
  readonly app: ReturnType<typeof createWitnessApp>
  readonly state: WitnessStateStore
  readonly events: WitnessEvent[]
  close(): Promise<void>
}

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-witness-'))
const keyFile = path.join(dir, 'witness.key')
const stateFile = path.join(dir, 'witness.state.json')
let witnessVkey: string
let running: Running

async function start(file = stateFile, options: { prefix?: string } = {}): Promise<Running> {
  const key = await readWitnessKeyFile(keyFile)
  const state = await openWitnessStateFile(file)
  const events: WitnessEvent[] = []
  const app = createWitnessApp({ key, logs: [LOG_VKEY], state, clock, onEvent: (e) => events.push(e), ...options })
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ server, port: info.port }))
  })
  return {
    url: `http://127.0.0.1:${port}${options.prefix ?? ''}`,
    app,
    state,
    events,
    close: async () => {
      await new Promise<void>((done) => {
        server.close(() => done())
        ;(server as unknown as { closeAllConnections(): void }).closeAllConnections()
      })
      await state.close()
    },
  }
}

async function addCheckpoint(text: string | Uint8Array, at = running.url) {
  const response = await fetch(`${at}/add-checkpoint`, { method: 'POST', body: text })
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() }
}

/** The witness's cosignature on `note` verifies with its vkey; returns its timestamp. */
function verifiedCosignature(note: string, cosignature: string): bigint {
  const opened = openNote(note + cosignature, [cosignatureVerifier(witnessVkey)])
  const line = opened.signatures.find((s) => s.verified === true)
  expect(line, 'a verified cosignature').toBeDefined()
  return cosignatureTimestamp(line!)!
}

const storedSize = () => (JSON.parse(readFileSync(stateFile, 'utf8')) as { logs: Record<string, { size: number }> }).logs[ORIGIN]?.size

beforeAll(async () => {
  const created = await createWitnessKeyFile(keyFile, 'witness.example/w1')
  witnessVkey = created.info.vkey
  running = await start()
})

afterAll(async () => {
  await running.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('witness over loopback HTTP', () => {
  it('GET / says what it is, with its vkey', async () => {
    const response = await fetch(`${running.url}/`)
    expect(response.status).toBe(200)
    const text = await response.text()
    expect(text).toContain('c2sp.org/tlog-witness')
    expect(text).toContain(`vkey ${witnessVkey}`)
    expect(text).toContain(`log ${ORIGIN}`)
  })

  it('the first checkpoint (old 0) is cosigned, and the cosignature verifies with the witness vkey', async () => {
    const note = checkpointNote(TREE, 100)
    const answer = await addCheckpoint(body(0, [], note))
    expect(answer.status).toBe(200)
    expect(answer.text).toMatch(/^\u2014 witness\.example\/w1 [A-Za-z0-9+/]+=*\n$/)
    expect(verifiedCosignature(note, answer.text)).toBe(BigInt(clockSeconds))
    expect(storedSize()).toBe(100)
  })

  it('growth with a valid consistency proof is cosigned', async () => {
    clockSeconds += 60
    const note = checkpointNote(TREE, 250)
    const answer = await addCheckpoint(body(100, await TREE.proof(100, 250), note))
    expect(answer.status).toBe(200)
    expect(verifiedCosignature(note, answer.text)).toBe(BigInt(clockSeconds))
    expect(storedSize()).toBe(250)
  })

  it('a wrong old size is 409 text/x.tlog.size with the size last cosigned', async () => {
    for (const old of [0, 100, 249, 251]) {
      const answer = await addCheckpoint(body(old, old === 0 ? [] : await TREE.proof(old, 300), checkpointNote(TREE, 300)))
      expect(answer).toEqual({ status: 409, type: 'text/x.tlog.size', text: '250\n' })
    }
    expect(storedSize()).toBe(250)
  })

  it('a rewritten history (other leaves, a valid log signature and its own valid proof) is refused 422', async () => {
    const answer = await addCheckpoint(body(250, await FORK.proof(250, 400), checkpointNote(FORK, 400)))
    expect(answer.status).toBe(422)
    // The same size with another root, too.
    expect((await addCheckpoint(body(250, [], checkpointNote(FORK, 250)))).status).toBe(422)
    expect(storedSize()).toBe(250)
    const evidence = running.events.filter((e) => e.evidence)
    expect(evidence.map((e) => e.reason)).toEqual(['bad_consistency_proof', 'root_mismatch'])
    expect(evidence[0]!.body).toContain('\n400\n')
  })

  it('a checkpoint signed by another key is 403; a trusted key\'s broken signature too', async () => {
    const forged = checkpointNote(TREE, 300, IMPOSTOR)
    expect((await addCheckpoint(body(250, await TREE.proof(250, 300), forged))).status).toBe(403)
    const genuine = checkpointNote(TREE, 300)
    const broken = genuine.replace(/ ([A-Za-z0-9+/]{10})([A-Za-z0-9+/])/, (_, a: string, b: string) => ` ${a}${b === 'A' ? 'B' : 'A'}`)
    expect(broken).not.toBe(genuine)
    expect((await addCheckpoint(body(250, await TREE.proof(250, 300), broken))).status).toBe(403)
    expect(storedSize()).toBe(250)
  })

  it('an unknown origin is 404', async () => {
    const answer = await addCheckpoint(body(0, [], checkpointNote(TREE, 10, STRANGER)))
    expect(answer.status).toBe(404)
  })

  it('bad input is 400, 405 or 413, never 500', async () => {
    expect((await addCheckpoint('')).status).toBe(400)
    expect((await addCheckpoint('old 01\n\n' + checkpointNote(TREE, 300))).status).toBe(400)
    expect((await addCheckpoint(Uint8Array.of(0x6f, 0x6c, 0x64, 0x20, 0x30, 0x0a, 0x0a, 0xff))).status).toBe(400)
    expect((await addCheckpoint(body(251, [], checkpointNote(TREE, 250)))).status).toBe(400)
    // Past the limit: 413 before the body is read (in process: over a socket the server may close
    // the connection while the client still sends, as it should).
    const big = await running.app.request('/add-checkpoint', { method: 'POST', body: 'x'.repeat(600 * 1024) })
    expect(big.status).toBe(413)
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 6; i++) controller.enqueue(new Uint8Array(100 * 1024).fill(0x78))
        controller.close()
      },
    })
    expect((await running.app.request('/add-checkpoint', { method: 'POST', body: chunked, duplex: 'half' } as RequestInit)).status).toBe(413)
    expect((await fetch(`${running.url}/add-checkpoint`)).status).toBe(405)
    expect((await fetch(`${running.url}/add-checkpoint`, { method: 'PUT', body: 'x' })).headers.get('allow')).toBe('POST')
    expect((await fetch(`${running.url}/nothing`)).status).toBe(404)
    expect(storedSize()).toBe(250)
  })

  it('serves the latest cosigned checkpoint to monitors at /<origin hash>/checkpoint', async () => {
    const response = await fetch(`${running.url}/${originHash(ORIGIN)}/checkpoint`)
    expect(response.status).toBe(200)
    const note = await response.text()
    const opened = openNote(note, [ed25519NoteVerifier(LOG_VKEY), cosignatureVerifier(witnessVkey)])
    expect(opened.text).toBe(checkpointBody({ origin: ORIGIN, size: 250, root: TREE.root(250) }))
    expect(opened.signatures.map((s) => [s.name, s.verified])).toEqual([
      [ORIGIN, true],
      ['witness.example/w1', true],
    ])
    expect((await fetch(`${running.url}/${originHash(STRANGER.name)}/checkpoint`)).status).toBe(404)
    expect((await fetch(`${running.url}/${'0'.repeat(64)}/checkpoint`)).status).toBe(404)
  })

  it('two concurrent requests from the same old size: exactly one is cosigned, the other gets 409', async () => {
    for (const [a, b] of [
      [300, 350],
      [400, 380],
      [420, 420],
    ] as const) {
      const from = storedSize()!
      const [first, second] = await Promise.all([
        addCheckpoint(body(from, await TREE.proof(from, a), checkpointNote(TREE, a))),
        addCheckpoint(body(from, await TREE.proof(from, b), checkpointNote(TREE, b))),
      ])
      const statuses = [first.status, second.status].sort()
      expect(statuses).toEqual([200, 409])
      const winner = first.status === 200 ? a : b
      expect(storedSize()).toBe(winner)
      expect([first, second].find((r) => r.status === 409)!.text).toBe(`${winner}\n`)
    }
  })

  it('ten concurrent requests: one wins, the file holds its size, the rest are told it', async () => {
    const from = storedSize()!
    const sizes = Array.from({ length: 10 }, (_, i) => from + 5 + i * 7)
    const answers = await Promise.all(sizes.map(async (n) => addCheckpoint(body(from, await TREE.proof(from, n), checkpointNote(TREE, n)))))
    const won = answers.flatMap((r, i) => (r.status === 200 ? [sizes[i]!] : []))
    expect(won).toHaveLength(1)
    expect(storedSize()).toBe(won[0])
    expect(answers.filter((r) => r.status === 409).every((r) => r.text === `${won[0]}\n`)).toBe(true)
  })

  it('the state survives a restart: a new app over the same file knows the size', async () => {
    const before = storedSize()!
    await running.close()
    running = await start()
    expect(await addCheckpoint(body(0, [], checkpointNote(TREE, 600)))).toEqual({ status: 409, type: 'text/x.tlog.size', text: `${before}\n` })
    const answer = await addCheckpoint(body(before, await TREE.proof(before, 600), checkpointNote(TREE, 600)))
    expect(answer.status).toBe(200)
    expect(storedSize()).toBe(600)
    // The same checkpoint again is cosigned again, the state unchanged.
    expect((await addCheckpoint(body(600, [], checkpointNote(TREE, 600)))).status).toBe(200)
    expect(storedSize()).toBe(600)
  })

  it('serves under a prefix when given one', async () => {
    const other = await start(path.join(dir, 'prefixed.state.json'), { prefix: '/witness' })
    try {
      expect((await addCheckpoint(body(0, [], checkpointNote(TREE, 3)), other.url)).status).toBe(200)
      expect((await fetch(`${other.url}/`)).status).toBe(200)
      expect((await addCheckpoint(body(0, [], checkpointNote(TREE, 3)), other.url.replace('/witness', ''))).status).toBe(404)
    } finally {
      await other.close()
    }
  })
})

describe('the state file', () => {
  it('is locked: a second open while one serves it is refused, in this process or another live one', async () => {
    await expect(openWitnessStateFile(stateFile)).rejects.toThrow(WitnessStateError)
    await expect(openWitnessStateFile(stateFile)).rejects.toThrow(/already serves/)
    const file = path.join(dir, 'held.state.json')
    // The parent of this test process is alive: its pid in the lock is another witness's.
    writeFileSync(`${file}.lock`, `${process.ppid}\n`)
    await expect(openWitnessStateFile(file)).rejects.toThrow(new RegExp(`another witness \\(pid ${process.ppid}\\)`))
    expect(readFileSync(`${file}.lock`, 'utf8')).toBe(`${process.ppid}\n`)
  })

  it('two opens at once: one gets the file, the other is refused', async () => {
    const file = path.join(dir, 'raced.state.json')
    const results = await Promise.allSettled([openWitnessStateFile(file), openWitnessStateFile(file)])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    for (const r of results) if (r.status === 'fulfilled') await r.value.close()
  })

  it('a lock left by a process that is gone is taken over', async () => {
    const file = path.join(dir, 'stale.state.json')
    writeFileSync(`${file}.lock`, '2147483646\n')
    const state = await openWitnessStateFile(file)
    expect(readFileSync(`${file}.lock`, 'utf8').trim()).toBe(String(process.pid))
    await state.close()
    // Our own pid, from an earlier process that had it (a container's pid 1 after a crash), too.
    writeFileSync(`${file}.lock`, `${process.pid}\n`)
    await (await openWitnessStateFile(file)).close()
    expect(() => statSync(`${file}.lock`)).toThrow()
  })

  it('is replaced whole: no temporary file is left, and the JSON is the documented shape', () => {
    expect(JSON.parse(readFileSync(stateFile, 'utf8'))).toMatchObject({
      format: 'hookledger-witness-state/v1',
      logs: { [ORIGIN]: { size: 600, root: Buffer.from(TREE.root(600)).toString('base64') } },
    })
    const leftovers = readdirSync(dir).filter((name) => name.includes('.tmp-'))
    expect(leftovers).toEqual([])
  })

  it('a state file gone or corrupted while serving is 500 and nothing is cosigned; it is never taken for empty', async () => {
    const saved = readFileSync(stateFile, 'utf8')
    rmSync(stateFile)
    let answer = await addCheckpoint(body(0, [], checkpointNote(TREE, 600)))
    expect(answer.status).toBe(500)
    writeFileSync(stateFile, '{"format":"hookledger-witness-state/v1","logs":{"x":{"size":-1,"root":""}}}')
    answer = await addCheckpoint(body(600, [], checkpointNote(TREE, 600)))
    expect(answer.status).toBe(500)
    expect(answer.text).toMatch(/nothing was cosigned/)
    writeFileSync(stateFile, saved)
    expect((await addCheckpoint(body(600, [], checkpointNote(TREE, 600)))).status).toBe(200)
  })

  it('an unreadable file refuses the start', async () => {
    const file = path.join(dir, 'corrupt.state.json')
    writeFileSync(file, 'not json')
    await expect(openWitnessStateFile(file)).rejects.toThrow(/not JSON/)
    // The failed open released its lock.
    expect(() => statSync(`${file}.lock`)).toThrow()
  })
})

describe('the key file', () => {
  it('is created 0600 in Go\'s skey format and read back', async () => {
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(readFileSync(keyFile, 'utf8')).toMatch(/^PRIVATE\+KEY\+witness\.example\/w1\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}\n$/)
    const key = await readWitnessKeyFile(keyFile)
    expect(key.name).toBe('witness.example/w1')
  })

  it('is never overwritten', async () => {
    const before = readFileSync(keyFile, 'utf8')
    await expect(createWitnessKeyFile(keyFile, 'other')).rejects.toMatchObject({ code: 'exists' })
    expect(readFileSync(keyFile, 'utf8')).toBe(before)
  })

  it('gets a default name, and refuses an invalid one', async () => {
    const made = await createWitnessKeyFile(path.join(dir, 'sub', 'default.key'))
    expect(made.info.name).toMatch(/^witness-[0-9a-f]{8}$/)
    expect(made.info.vkey.startsWith(`${made.info.name}+${made.info.keyId}+`)).toBe(true)
    await expect(createWitnessKeyFile(path.join(dir, 'bad.key'), 'has space')).rejects.toMatchObject({ code: 'invalid_name' })
  })

  it('is refused when others may read it, or when it is not a key (without echoing it)', async () => {
    const open = path.join(dir, 'open.key')
    writeFileSync(open, readFileSync(keyFile))
    chmodSync(open, 0o644)
    await expect(readWitnessKeyFile(open)).rejects.toMatchObject({ code: 'too_open' })
    const junk = path.join(dir, 'junk.key')
    writeFileSync(junk, 'PRIVATE+KEY+secret-material\n', { mode: 0o600 })
    const error = await readWitnessKeyFile(junk).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WitnessKeyFileError)
    expect((error as Error).message).not.toContain('secret-material')
    await expect(readWitnessKeyFile(path.join(dir, 'missing.key'))).rejects.toMatchObject({ code: 'unreadable' })
  })
})
