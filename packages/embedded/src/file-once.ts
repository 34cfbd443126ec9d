import { randomBytes } from 'node:crypto'
import { linkSync, rmSync, writeFileSync } from 'node:fs'

/**
 * Creates `file` holding `text` unless it exists; true if this call made it. Written to a file
 * of this process's own first and hard-linked into place, so processes starting together on a
 * fresh data dir agree on one file (the first link wins) and none ever reads it half written:
 * an exclusive create alone is visible, empty, before its write.
 */
export function createFileOnce(file: string, text: string, mode: number): boolean {
  const staged = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  writeFileSync(staged, text, { mode, flag: 'wx' })
  try {
    linkSync(staged, file)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  } finally {
    rmSync(staged, { force: true })
  }
}
