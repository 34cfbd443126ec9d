import { execFile, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { serve, type ServerType } from '@hono/node-server'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CHAIN_ROW_COLUMNS,
  formatTlogProof,
  generateLedgerSigningKey,
  inclusionProofFromTiles,
  ledgerRowBytes,
  ledgerVerifierKey,
  parseLedgerSigningKey,
  tilePath,
  type ChainRow,
  type TileReader,
} from '@hookledger/ledger'
import { sealEverything, syntheticLedgerHistory, testApi, testDatabase, type TestDatabase } from '@hookledger/testkit'

/**
 * The transparency log checked by code we did not write: the Go checksum database's own
 * golang.org/x/mod/sumdb/note and …/tlog (Debian's golang-golang-x-mod-dev, built in GOPATH
 * mode, no module proxy). tests/go/tlogcheck fetches the checkpoint and the tiles over HTTP
 * from the real app on a loopback port, opens the note with our vkey, proves records and trees
 * with tlog.ProveRecord/ProveTree and checks them with tlog.CheckRecord/CheckTree, and verifies
 * a .tlog-proof file we wrote. Skipped where Go or the x/mod sources are not installed.
 */

const GO_SUMDB_TLOG = '/usr/share/gocode/src/golang.org/x/mod/sumdb/tlog'
const goOnPath = (() => {
  const probe = spawnSync('go', ['version'], { encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local' } })
  return probe.error === undefined && probe.status === 0
})()
const haveGo = goOnPath && existsSync(GO_SUMDB_TLOG)

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
// Kept across runs of this file, so the build after the first is a cache hit.
const goCache = path.join(tmpdir(), 'hookledger-tlogcheck-gocache')

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Asynchronously: the program fetches from the server this same process serves. */
function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: repoRoot, env, timeout: 30_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
      resolve({ code, stdout, stderr })
    })
  })
}

const key = parseLedgerSigningKey(generateLedgerSigningKey().secret)
const otherKey = parseLedgerSigningKey(generateLedgerSigningKey().secret)

describe.skipIf(!haveGo)("the log, checked by the Go checksum database's own note and tlog packages", () => {
  // Made in beforeAll: a skipped describe's body still runs, its hooks do not.
  let dir = ''
  let binary = ''
  let database: TestDatabase
  let server: ServerType | null = null
  let logUrl = ''
  let vkey = ''
  let origin = ''
  let rows: ChainRow[] = []
  let notes: { total: number; note: string }[] = []
  let proofFile = ''
  let rowFile = ''
  let oldNoteArgs: string[] = []
  let provenIndex = 0
  let buildMs = 0

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookledger-tlogcheck-'))
    binary = path.join(dir, 'tlogcheck')
    mkdirSync(goCache, { recursive: true })
    const started = Date.now()
    const build = await run('go', ['build', '-o', binary, './tests/go/tlogcheck'], {
      ...process.env,
      // GOPATH mode: golang.org/x/mod resolves from Debian's /usr/share/gocode/src, the rest
      // from GOROOT; no go.mod, no module proxy, nothing downloaded.
      GO111MODULE: 'off',
      GOPATH: '/usr/share/gocode',
      GOFLAGS: '',
      GOPROXY: 'off',
      GOTOOLCHAIN: 'local',
      // Pure Go: no C compiler needed (golang-go only recommends gcc), and the binary is static.
      CGO_ENABLED: '0',
      GOCACHE: goCache,
    })
    buildMs = Date.now() - started
    expect(build.code, build.stderr).toBe(0)

    database = await testDatabase()
    const api = testApi(database.db)
    // > 256 rows: one full level-0 tile and a partial one. The history is one transaction, and
    // one ledgerSeal call seals until caught up (maxRows per checkpoint), so it gives checkpoints
    // every 97 rows — the third one's batch crosses the first tile's edge — and a short last one.
    await syntheticLedgerHistory(database.db, { deliveries: 70, endpoints: 3 })
    // (Other files' open transactions can hold the horizon back a moment: seal until all is sealed.)
    await sealEverything(database.db, key, () => new Date(), { maxRows: 97 })
    // Then a few rows at a time, each write its own transaction: short, uneven checkpoints.
    const token = await api.token('go', ['admin'])
    for (const endpoints of [3, 1, 2]) {
      for (let i = 0; i < endpoints; i++) {
        const created = await api.call('POST', '/api/admin/webhooks', { token, body: { url: `http://127.0.0.1:9/hook-${i}`, event_types: ['*'] } })
        expect(created.status, created.text).toBe(201)
      }
      await sealEverything(database.db, key, () => new Date())
    }
    rows = (await sql<ChainRow>`select ${CHAIN_ROW_COLUMNS} from ledger order by ledger.tx_id, ledger.position`.execute(database.db)).rows
    notes = (
      await sql<{ total: string; tree_note: string }>`select total::text, tree_note from ledger_checkpoints order by seq`.execute(database.db)
    ).rows.map((r) => ({ total: Number(r.total), note: r.tree_note }))
    origin = (await sql<{ origin: string }>`select origin from ledger_log`.execute(database.db)).rows[0]!.origin
    vkey = ledgerVerifierKey(origin, key.publicKey)

    const app = api.app
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port))
    })
    logUrl = `http://127.0.0.1:${port}/log`

    // One offline proof, from our code: a row in the partial tile, against the newest note.
    const size = notes.at(-1)!.total
    provenIndex = 256 + Math.floor((size - 256) / 2)
    const reader: TileReader = (tiles) =>
      Promise.all(
        tiles.map(async (t) => {
          const res = await fetch(`${logUrl}/${tilePath(t)}`)
          expect(res.status, tilePath(t)).toBe(200)
          return new Uint8Array(await res.arrayBuffer())
        }),
      )
    const proof = await inclusionProofFromTiles(provenIndex, size, reader)
    const rowBytes = ledgerRowBytes(rows[provenIndex]!)
    proofFile = path.join(dir, 'row.tlog-proof')
    rowFile = path.join(dir, 'row.bytes')
    writeFileSync(proofFile, formatTlogProof({ extra: rowBytes, index: provenIndex, proof, checkpoint: notes.at(-1)!.note }))
    writeFileSync(rowFile, rowBytes)

    // Every earlier checkpoint, as the note it signed then.
    oldNoteArgs = notes.slice(0, -1).flatMap(({ total, note }, i) => {
      const file = path.join(dir, `checkpoint-${i}-${total}.note`)
      writeFileSync(file, note)
      return ['-old-note', file]
    })
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
    await database?.close()
    if (dir !== '') rmSync(dir, { recursive: true, force: true })
  })

  const lines = (out: string) => out.split('\n').filter((l) => l !== '')

  it('builds in GOPATH mode against the Debian x/mod sources, and seals > 256 rows over several checkpoints', () => {
    expect(buildMs).toBeLessThan(45_000)
    expect(rows.length).toBeGreaterThan(256)
    expect(rows.length % 256).not.toBe(0)
    const sizes = notes.map((n) => n.total)
    expect(new Set(sizes).size).toBe(sizes.length)
    expect(sizes.length).toBeGreaterThan(5)
    expect(sizes.some((m, i) => i > 0 && sizes[i - 1]! < 256 && m > 256), 'a checkpoint batch across the tile edge').toBe(true)
    expect(notes.at(-1)!.total).toBe(rows.length)
  })

  it('Go opens the checkpoint, proves every record and every older checkpoint, and accepts our .tlog-proof', async () => {
    const size = rows.length
    const olderSizes = [...new Set(notes.slice(0, -1).map((n) => n.total))]
    const result = await run(binary, [
      '-log', logUrl,
      '-vkey', vkey,
      '-records', 'all',
      '-old', olderSizes.join(','),
      ...oldNoteArgs,
      '-proof', proofFile,
      '-row', rowFile,
    ])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const out = lines(result.stdout)
    expect(out.filter((l) => l.startsWith('FAIL'))).toEqual([])
    expect(out[0]).toMatch(new RegExp(`^ok {3}checkpoint: note.Open verified "${origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"'s signature; size ${size} root `))
    expect(out).toContainEqual(expect.stringMatching(new RegExp(`^ok {3}tree ${size}: tlog.TreeHash over \\d+ hash tile\\(s\\) read equals the signed root$`)))
    for (const i of [0, 255, 256, size - 1]) {
      expect(out.some((l) => l.startsWith(`ok   record ${i}: `) && l.endsWith(`proof into tree ${size}`)), `record ${i}`).toBe(true)
    }
    expect(out).toContain(`ok   records: ${size} of ${size} proven, entry bundles read: 2`)
    for (const { total } of notes.slice(0, -1)) {
      expect(out).toContain(`ok   tree ${total}: the older signed note's root is what the current tiles give`)
      expect(out.some((l) => l.startsWith(`ok   tree ${total} → ${size}: tlog.CheckTree accepts`) && l.endsWith('(signed root)'))).toBe(true)
      expect(out.some((l) => l.startsWith(`ok   tree ${total} → ${size}: tlog.CheckTree accepts`) && l.endsWith('(root from the current tiles)'))).toBe(true)
    }
    expect(out).toEqual(
      expect.arrayContaining([
        'ok   proof file: its checkpoint opens with the vkey (size ' + size + ')',
        'ok   proof file: extra is the expected row\'s bytes',
        `ok   proof file: tlog.CheckRecord accepts it: SHA-256(extra) is record ${provenIndex} of tree ${size}`,
        `ok   proof file: the live entry bundle holds SHA-256(extra) at index ${provenIndex}`,
      ]),
    )
    expect(out.some((l) => /^ok {3}proof file: its \d+ hashes are exactly tlog.ProveRecord's over the live tiles$/.test(l))).toBe(true)
    expect(out.at(-1)).toBe('0 failed')
  })

  it('the default selection proves records at both ends and on both sides of the tile edge', async () => {
    const result = await run(binary, ['-log', logUrl, '-vkey', vkey])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const proven = lines(result.stdout).flatMap((l) => /^ok {3}record (\d+): /.exec(l)?.[1] ?? [])
    const size = rows.length
    expect(proven.map(Number)).toEqual([0, 255, 256, Math.floor(size / 2), size - 1].filter((v, i, a) => a.indexOf(v) === i))
  })

  it('a changed byte in a hash line of the proof file fails tlog.CheckRecord', async () => {
    const text = readFileSync(proofFile, 'utf8')
    const head = text.slice(0, text.indexOf('\n\n')).split('\n')
    const at = head.findIndex((l) => !l.startsWith('c2sp.org/') && !l.startsWith('extra ') && !l.startsWith('index '))
    expect(at).toBeGreaterThan(0)
    const hash = Buffer.from(head[at]!, 'base64')
    hash[7] = hash[7]! ^ 0x01
    head[at] = hash.toString('base64')
    const forged = path.join(dir, 'forged.tlog-proof')
    writeFileSync(forged, head.join('\n') + text.slice(text.indexOf('\n\n')))

    const result = await run(binary, ['-log', logUrl, '-vkey', vkey, '-records', '0', '-proof', forged, '-row', rowFile])
    expect(result.code).toBe(1)
    const out = lines(result.stdout)
    expect(out.some((l) => l.startsWith(`FAIL proof file: tlog.CheckRecord(SHA-256(extra)) at index ${provenIndex} in tree ${rows.length}: `))).toBe(true)
    expect(out).toContain(`FAIL proof file: its hashes differ from tlog.ProveRecord(${rows.length}, ${provenIndex}) over the live tiles`)
    expect(out.at(-1)).toBe('2 failed')
  })

  it("the note checked against another key's vkey (same origin) is refused by note.Open", async () => {
    const otherVkey = ledgerVerifierKey(origin, otherKey.publicKey)
    expect(otherVkey).not.toBe(vkey)
    const result = await run(binary, ['-log', logUrl, '-vkey', otherVkey, '-proof', proofFile])
    expect(result.code).toBe(1)
    expect(lines(result.stdout)).toEqual([expect.stringMatching(/^FAIL checkpoint: note.Open: note has no verifiable signatures/)])
  })
})
