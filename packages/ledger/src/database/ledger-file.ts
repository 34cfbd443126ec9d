/**
 * Export and archive files on disk: JSON lines, gzip-compressed when the name ends in `.gz`
 * (an archive of 1,000,000 deliveries is ~2 GB as text, a fifth of that compressed). The
 * SHA-256 a `ledger.retention` entry records is of the bytes on disk.
 */
import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { Transform } from 'node:stream'
import { once } from 'node:events'
import { pipeline } from 'node:stream/promises'
import { createGunzip, createGzip } from 'node:zlib'

const gzipped = (file: string) => file.endsWith('.gz')

/** The lines of an export or archive file, decompressed if its name ends in `.gz`. */
export function ledgerFileLines(file: string): AsyncIterable<string> {
  const raw = createReadStream(file)
  return createInterface({ input: gzipped(file) ? raw.pipe(createGunzip()) : raw, crlfDelay: Infinity })
}

/**
 * Creates `file` (it must not exist), lets `produce` write text into it (compressed when the
 * name ends in `.gz`), flushes it to disk, and returns the SHA-256 and size of what it holds.
 */
export async function ledgerFileWrite(file: string, produce: (write: (text: string) => Promise<void>) => Promise<void>): Promise<{ sha256: string; bytes: number }> {
  // Created exclusively up front, so an existing file is an error before any work.
  await (await open(file, 'wx', 0o600)).close()
  const hash = createHash('sha256')
  let bytes = 0
  const tally = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk)
      bytes += chunk.length
      callback(null, chunk)
    },
  })
  const out = createWriteStream(file, { flags: 'r+' })
  const head: Transform = gzipped(file) ? createGzip() : tally
  const done = gzipped(file) ? pipeline(head, tally, out) : pipeline(tally, out)
  const failed = done.then(
    () => null,
    (err: unknown) => err,
  )
  try {
    await produce(async (text) => {
      if (!head.write(text)) await Promise.race([once(head, 'drain'), failed.then((err) => Promise.reject(err ?? new Error('the file closed early')))])
    })
  } catch (err) {
    head.destroy()
    await failed
    throw err
  }
  head.end()
  await done
  // On disk before anything relies on it (the archive drops what it holds).
  const handle = await open(file, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
  return { sha256: hash.digest('hex'), bytes }
}
