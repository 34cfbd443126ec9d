import { existsSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'

/**
 * Removes a data dir a test made, and the cluster directory it points to when the embedded
 * cluster was relocated (root in a directory the `postgres` account cannot enter).
 */
export function removeDataDir(dataDir: string): void {
  const location = path.join(dataDir, 'cluster-location')
  if (existsSync(location)) rmSync(readFileSync(location, 'utf8').trim(), { recursive: true, force: true })
  rmSync(dataDir, { recursive: true, force: true })
}
