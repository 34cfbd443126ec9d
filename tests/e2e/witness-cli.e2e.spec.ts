import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  checkpointBody,
  consistencyProofFromTiles,
  cosignatureVerifier,
  edgeAppend,
  edgeRoot,
  EMPTY_TREE_EDGE,
  encodeVerifierKey,
  noteSignerPublicKey,
  openNote,
  signNote,
  type TileReader,
} from '@hookledger/ledger'
import { HOOKLEDGER_BIN, ROOT, runCli } from './cli-process.js'

/** `hookledger witness key` and `witness serve` as real processes: a key, a cosignature, a clean SIGTERM. */

const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-witness-e2e-'))
const keyFile = path.join(dir, 'witness.key')
const children: ChildProcess[] = []

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

const sha256 = (...parts: (Uint8Array | string)[]) => {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}

const ORIGIN = 'e2e.example/log'
const LOG = { name: ORIGIN, seed: sha256('e2e log seed') }
const LOG_VKEY = encodeVerifierKey(ORIGIN, noteSignerPublicKey(LOG))

/** A tree of `size` leaves: its root, and a tile reader for consistency proofs. */
function tree(size: number): { root: Uint8Array; reader: TileReader } {
  const grown = edgeAppend(
    EMPTY_TREE_EDGE,
    Array.from({ length: size }, (_, i) => sha256(Uint8Array.of(0), `row ${i}`)),
  )
  const byHeight = new Map<number, Uint8Array[]>()
  for (const { height, index, hash } of grown.stored) {
    const row = byHeight.get(height) ?? []
    row[index] = hash
    byHeight.set(height, row)
  }
  const reader: TileReader = async (tiles) => tiles.map(({ level, index, width }) => Buffer.concat((byHeight.get(8 * level) ?? []).slice(256 * index, 256 * index + width)))
  return { root: edgeRoot(grown.edge), reader }
}

/** `hookledger witness serve …`, resolved on its start line. */
async function startWitness(args: string[]): Promise<{ child: ChildProcess; url: string; vkey: string; output: () => string; exit: Promise<number | null> }> {
  const child = spawn(HOOKLEDGER_BIN, ['witness', 'serve', ...args], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let output = ''
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const [url, vkey] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`witness serve did not start:\n${output}`)), 30_000)
    const onData = (d: Buffer) => {
      output += d.toString()
      const m = /hookledger witness listening on (http:\/\/\S+) \(pid \d+\), vkey (\S+),/.exec(output)
      if (m) {
        clearTimeout(timer)
        resolve([m[1]!, m[2]!])
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    void exit.then((code) => (clearTimeout(timer), reject(new Error(`witness serve exited ${code}:\n${output}`))))
  })
  return { child, url, vkey, output: () => output, exit }
}

describe('hookledger witness', () => {
  let witnessVkey = ''

  it('witness key makes a 0600 key and prints its vkey; it never overwrites one', async () => {
    const made = await runCli(['witness', 'key', '--key-file', keyFile, '--name', 'e2e.example/witness', '--json'], {})
    expect(made.code).toBe(0)
    const printed = JSON.parse(made.stdout) as { vkey: string; name: string; key_id: string }
    expect(printed.name).toBe('e2e.example/witness')
    expect(printed.vkey.startsWith(`e2e.example/witness+${printed.key_id}+`)).toBe(true)
    // A cosigner vkey: signature type 0x04 before the 32-byte Ed25519 key.
    expect([...Buffer.from(printed.vkey.split('+')[2]!, 'base64')].slice(0, 1)).toEqual([0x04])
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    witnessVkey = printed.vkey
    const before = readFileSync(keyFile, 'utf8')
    const again = await runCli(['witness', 'key', '--key-file', keyFile], {})
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/exists: a witness key is never overwritten/)
    expect(readFileSync(keyFile, 'utf8')).toBe(before)
  })

  it('witness serve cosigns a checkpoint, growth with a proof, answers 409 with its size, and exits 0 on SIGTERM', async () => {
    const witness = await startWitness(['--port', '0', '--key-file', keyFile, '--log', LOG_VKEY])
    expect(witness.vkey).toBe(witnessVkey)
    const post = async (body: string) => {
      const response = await fetch(`${witness.url}/add-checkpoint`, { method: 'POST', body })
      return { status: response.status, type: response.headers.get('content-type'), text: await response.text() }
    }

    const first = tree(10)
    const firstNote = signNote(checkpointBody({ origin: ORIGIN, size: 10, root: first.root }), [LOG])
    const cosigned = await post(`old 0\n\n${firstNote}`)
    expect(cosigned.status).toBe(200)
    const opened = openNote(firstNote + cosigned.text, [cosignatureVerifier(witnessVkey)])
    expect(opened.signatures.filter((s) => s.verified === true).map((s) => s.name)).toEqual(['e2e.example/witness'])

    const second = tree(40)
    const proof = await consistencyProofFromTiles(10, 40, second.reader)
    const secondNote = signNote(checkpointBody({ origin: ORIGIN, size: 40, root: second.root }), [LOG])
    const grown = await post(`old 10\n${proof.map((h) => Buffer.from(h).toString('base64') + '\n').join('')}\n${secondNote}`)
    expect(grown.status).toBe(200)
    expect(openNote(secondNote + grown.text, [cosignatureVerifier(witnessVkey)]).signatures.some((s) => s.verified === true)).toBe(true)

    expect(await post(`old 0\n\n${secondNote}`)).toEqual({ status: 409, type: 'text/x.tlog.size', text: '40\n' })
    expect(witness.output()).toMatch(/add-checkpoint 200 cosigned origin="e2e\.example\/log" size=40/)

    // A second witness on the same state file is refused while this one runs.
    const rival = await runCli(['witness', 'serve', '--port', '0', '--key-file', keyFile, '--log', LOG_VKEY], {})
    expect(rival.code).toBe(1)
    expect(rival.stderr).toMatch(new RegExp(`another witness \\(pid ${witness.child.pid}\\)`))

    witness.child.kill('SIGTERM')
    expect(await witness.exit).toBe(0)
    expect(witness.output()).toMatch(/hookledger witness stopped \(SIGTERM\)/)
    // The state outlives the process, beside the key file; the lock is gone.
    const state = JSON.parse(readFileSync(path.join(dir, 'witness.state.json'), 'utf8')) as { logs: Record<string, { size: number }> }
    expect(state.logs[ORIGIN]!.size).toBe(40)
    expect(() => statSync(path.join(dir, 'witness.state.json.lock'))).toThrow()

    // Restarted, it still knows the size.
    const restarted = await startWitness(['--port', '0', '--key-file', keyFile, '--log', LOG_VKEY])
    const answer = await fetch(`${restarted.url}/add-checkpoint`, { method: 'POST', body: `old 0\n\n${firstNote}` })
    expect([answer.status, await answer.text()]).toEqual([409, '40\n'])
    restarted.child.kill('SIGINT')
    expect(await restarted.exit).toBe(0)
  })

  it('refuses bad flags with exit 2 and one line', async () => {
    const noLog = await runCli(['witness', 'serve', '--key-file', keyFile], {})
    expect(noLog.code).toBe(2)
    expect(noLog.stderr).toMatch(/--log <vkey> is required/)
    const badLog = await runCli(['witness', 'serve', '--key-file', keyFile, '--log', 'not-a-vkey'], {})
    expect(badLog.code).toBe(2)
    expect(badLog.stderr).toMatch(/--log: /)
    const noKey = await runCli(['witness', 'key'], {})
    expect(noKey.code).toBe(2)
  })
})
