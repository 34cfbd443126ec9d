import { rmSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import type { TestProject } from 'vitest/node'
import { createDb, migrateToLatest, openEmbeddedDatabase, type EmbeddedDatabase } from '@hookledger/store'

/** The template every test file's database is cloned from. */
export const TEMPLATE_DB = 'hookledger_template'

declare module 'vitest' {
  export interface ProvidedContext {
    pgServerUrl: string
  }
}

let embedded: EmbeddedDatabase | null = null

/**
 * One PostgreSQL per test run: the embedded one (a throwaway cluster under
 * `.hookledger-test/`, durability off for speed) unless `DATABASE_URL` names a server. The
 * schema is migrated once into a template database; each test file clones it in milliseconds.
 */
export default async function setup(project: TestProject) {
  let serverUrl: (db?: string) => string
  if (process.env['DATABASE_URL']) {
    const base = new URL(process.env['DATABASE_URL'])
    serverUrl = (db = 'postgres') => Object.assign(new URL(base), { pathname: `/${db}` }).toString()
  } else {
    const dataDir = path.resolve('.hookledger-test')
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
  await migrateToLatest(db)
  await db.destroy()
  project.provide('pgServerUrl', serverUrl('postgres'))
  return async () => {
    await embedded?.stop()
  }
}
