/**
 * A key file is made whole or not at all: three `serve` processes started together on a fresh
 * data dir once read the key while the first was still writing it (an exclusive create is
 * visible, empty, before its write), and refused to start. Here another process reads the key's
 * path in a tight loop while this one makes the key again and again; it must never see a file
 * that is there but not a whole key.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from './config.js'
import { loadMasterKey } from './key-files.js'

const root = mkdtempSync(path.join(tmpdir(), 'hookledger-key-files-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Reads `file` until told to stop; prints how many reads found it, and every text that was not a whole key line. */
const READER = `
const fs = require('node:fs')
const file = process.argv[1]
let found = 0, torn = []
let stop = false
process.stdin.on('data', () => { stop = true })
const spin = () => {
  for (let i = 0; i < 2000; i++) {
    let text
    try { text = fs.readFileSync(file, 'utf8') } catch { continue }
    found++
    if (!/^[A-Za-z0-9+\\/]{43}=\\n$/.test(text) && torn.length < 5) torn.push(text)
  }
  if (stop) process.stdout.write(JSON.stringify({ found, torn }))
  else setImmediate(spin)
}
process.stdout.write('ready\\n')
spin()
`

describe('key files are created whole', () => {
  it('a process reading the path while the key is made sees no file or the whole key, never a part', async () => {
    const dir = path.join(root, 'data')
    const config = loadConfig({ HOOKLEDGER_DATA_DIR: dir })
    const file = path.join(dir, 'master.key')
    const reader = spawn(process.execPath, ['-e', READER, file], { stdio: ['pipe', 'pipe', 'inherit'] })
    let out = ''
    reader.stdout.on('data', (d: Buffer) => (out += d.toString()))
    await new Promise<void>((resolve) => reader.stdout.once('data', () => resolve()))
    const made = new Set<string>()
    for (let round = 0; round < 3000; round++) {
      rmSync(file, { force: true })
      const key = loadMasterKey(config)
      made.add(Buffer.from(key).toString('hex'))
    }
    const closed = new Promise((resolve) => reader.on('close', resolve))
    reader.stdin.end('stop')
    await closed
    const { found, torn } = JSON.parse(out.slice(out.indexOf('\n') + 1)) as { found: number; torn: string[] }
    expect(made.size).toBe(3000)
    // The reader did race the maker (it found the file), and never caught it half made.
    expect(found).toBeGreaterThan(0)
    expect(torn).toEqual([])
    // Each creation's staging file is gone again.
    expect(readdirSync(dir)).toEqual(['master.key'])
  })
})
