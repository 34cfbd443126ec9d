import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import type { TestProject } from 'vitest/node'
import { createDb, migrateToLatest } from '@hookledger/store'
import { openEmbeddedDatabase, processAlive, runningCluster, type EmbeddedDatabase } from '@hookledger/embedded'

/**
 * The login roles' passwords in the test cluster (roles are cluster-wide; every test database
 * is cloned from the template with its grants). Not a secret: the cluster lives for one run.
 */
export const TEST_ROLE_PASSWORDS = { service: 'test-service', publisher: 'test-publisher', reader: 'test-reader' } as const

/** The template every test file's database is cloned from. */
export const TEMPLATE_DB = 'hookledger_template'

declare module 'vitest' {
  export interface ProvidedContext {
    pgServerUrl: string
  }
}

let embedded: EmbeddedDatabase | null = null
let dataDir: string | null = null

/**
 * One PostgreSQL per test run: the embedded one (a throwaway cluster under
 * `.hookledger-test/`, durability off for speed) unless `DATABASE_URL` names a server. The
 * schema is migrated once into a template database; each test file clones it in milliseconds.
 */
export default async function setup(project: TestProject) {
  // Unit tests need no database, and fault files run their own: a run of only those starts none.
  if (project.vitest.projects.every((p) => p.name === 'unit' || p.name === 'faults')) return
  let serverUrl: (db?: string) => string
  if (process.env['DATABASE_URL']) {
    const base = new URL(process.env['DATABASE_URL'])
    serverUrl = (db = 'postgres') => Object.assign(new URL(base), { pathname: `/${db}` }).toString()
  } else {
    // One cluster per run, under a directory named after this process: two runs in the same
    // checkout (two terminals, parallel agents) must not wipe each other's cluster.
    const root = path.resolve('.hookledger-test')
    await removeStaleRuns(root)
    dataDir = path.join(root, `run-${process.pid}`)
    rmSync(dataDir, { recursive: true, force: true })
    embedded = await openEmbeddedDatabase({
      dataDir,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '400' },
    })
    serverUrl = embedded.url
  }
  const admin = new pg.Client({ connectionString: serverUrl('postgres') })
  await admin.connect()
  await admin.query(`drop database if exists ${TEMPLATE_DB}`)
  await admin.query(`create database ${TEMPLATE_DB}`)
  await admin.end()
  const db = createDb(new pg.Pool({ connectionString: serverUrl(TEMPLATE_DB), max: 1 }))
  await migrateToLatest(db, undefined, { passwords: TEST_ROLE_PASSWORDS })
  await db.destroy()
  project.provide('pgServerUrl', serverUrl('postgres'))
  return async () => {
    await embedded?.stop()
    if (embedded) rmSync(embedded.clusterDir, { recursive: true, force: true })
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
}

/**
 * Removes what runs that are gone left behind (`run-<pid>` of a dead pid): their cluster is
 * stopped (immediate shutdown: it is throwaway) and its files removed, wherever they live.
 */
async function removeStaleRuns(root: string): Promise<void> {
  if (!existsSync(root)) return
  for (const name of readdirSync(root)) {
    const run = /^run-(\d+)$/.exec(name)
    if (!run || processAlive(Number(run[1]))) continue
    const dir = path.join(root, name)
    const location = path.join(dir, 'cluster-location')
    const clusterDir = existsSync(location) ? readFileSync(location, 'utf8').trim() : path.join(dir, 'pg')
    const server = runningCluster(clusterDir)
    if (server) {
      process.kill(server.pid, 'SIGQUIT')
      for (let i = 0; i < 100 && processAlive(server.pid); i++) await new Promise((r) => setTimeout(r, 50))
    }
    rmSync(clusterDir, { recursive: true, force: true })
    rmSync(dir, { recursive: true, force: true })
  }
}
