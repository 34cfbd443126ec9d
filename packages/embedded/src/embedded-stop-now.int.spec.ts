import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openEmbeddedDatabase, processAlive, runningCluster } from './embedded-database.js'

const root = mkdtempSync(path.join(tmpdir(), 'hookledger-stop-now-'))
afterAll(() => {
  // A cluster run as the `postgres` account (when this runs as root) lives where `cluster-location` says.
  const location = path.join(root, 'data', 'cluster-location')
  if (existsSync(location)) rmSync(readFileSync(location, 'utf8').trim(), { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

describe('stopNow: a forced exit still stops the cluster it leaves behind', () => {
  it('signals the postmaster to shut down at once when this process is its last user', async () => {
    const database = await openEmbeddedDatabase({ dataDir: path.join(root, 'data') })
    const running = runningCluster(database.clusterDir)
    expect(running).not.toBeNull()
    database.stopNow()
    // A fast shutdown takes a moment: wait for the process, not for a fixed time.
    const deadline = Date.now() + 20_000
    while (processAlive(running!.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(processAlive(running!.pid)).toBe(false)
    expect(runningCluster(database.clusterDir)).toBeNull()
  }, 60_000)
})
