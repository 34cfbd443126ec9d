import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createFileOnce } from './file-once.js'

const root = mkdtempSync(path.join(tmpdir(), 'hookledger-file-once-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('createFileOnce', () => {
  it('makes the file with its mode, then leaves it as the first call wrote it', () => {
    const file = path.join(root, 'a.key')
    expect(createFileOnce(file, 'first\n', 0o600)).toBe(true)
    expect(createFileOnce(file, 'second\n', 0o600)).toBe(false)
    expect(readFileSync(file, 'utf8')).toBe('first\n')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    // No staging file is left behind either way.
    expect(readdirSync(root)).toEqual(['a.key'])
  })

  it('never replaces a file something else wrote', () => {
    const file = path.join(root, 'b.json')
    writeFileSync(file, '{"user":"someone"}')
    expect(createFileOnce(file, '{"user":"hookledger"}', 0o600)).toBe(false)
    expect(readFileSync(file, 'utf8')).toBe('{"user":"someone"}')
  })

  it('fails loudly where it cannot write (not as "exists")', () => {
    expect(() => createFileOnce(path.join(root, 'missing-dir', 'c.key'), 'x', 0o600)).toThrow(/ENOENT/)
  })
})
