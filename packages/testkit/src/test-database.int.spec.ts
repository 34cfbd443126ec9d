import { describe, expect, inject, it } from 'vitest'
import pg from 'pg'
import { testDatabase } from './test-database.js'

async function onServer<T>(q: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: inject('pgServerUrl') })
  await c.connect()
  try {
    return await q(c)
  } finally {
    await c.end()
  }
}

describe('a test database', () => {
  it('is dropped when closed, with the roles made for it, even with a connection left open', async () => {
    const t = await testDatabase({ schema: 'second' })
    const other = await testDatabase()
    const left = new pg.Client({ connectionString: t.url })
    await left.connect()
    left.on('error', () => {})
    const rolesOf = (name: string) =>
      onServer(async (c) => (await c.query<{ rolname: string }>(`select rolname from pg_roles where rolname like $1`, [`hookledger\\_${name}\\_%`])).rows.length)
    const exists = (name: string) => onServer(async (c) => (await c.query(`select 1 from pg_database where datname = $1`, [name])).rows.length === 1)
    expect(await rolesOf(t.name)).toBeGreaterThan(0)
    await t.close()
    expect(await exists(t.name)).toBe(false)
    expect(await rolesOf(t.name)).toBe(0)
    // Another file's database is untouched.
    expect(await exists(other.name)).toBe(true)
    expect(await rolesOf(other.name)).toBeGreaterThan(0)
    await other.close()
    await left.end().catch(() => {})
  })
})
