import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'

/** Where the first start's token is written: beside the install's other key files. */
export const FIRST_START_TOKEN_FILE = 'first-start-token'

/**
 * Keeps the first start's admin + publish token in a file only this account can read (0600),
 * and answers the line to print: the path, never the token — standard output is what log
 * collectors keep. A file left from an earlier install is replaced.
 */
export function writeFirstStartToken(dataDir: string, token: string): { file: string; line: string } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const file = path.join(dataDir, FIRST_START_TOKEN_FILE)
  writeFileSync(file, token + '\n', { mode: 0o600 })
  return {
    file,
    line: `first start: created an admin + publish token for owner "default" in ${file} (readable by this account only; read it once, e.g. TOKEN=$(cat ${file}), then delete the file)`,
  }
}
