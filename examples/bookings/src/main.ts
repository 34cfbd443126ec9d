// Runs the bookings example against hookledger's database: DATABASE_URL (from
// `npx hookledger database-url`), PORT (default 3000), HOOKLEDGER_DB_SCHEMA (default hookledger).
import { serve } from '@hono/node-server'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { createPublisher } from '@hookledger/publisher'
import { createBookingsApp } from './bookings-app.js'
import { bookingsTableEnsure, type BookingsDatabase } from './bookings-db.js'

const url = process.env['DATABASE_URL']
if (!url) {
  console.error('set DATABASE_URL: export DATABASE_URL="$(npx hookledger database-url)"')
  process.exit(2)
}
const port = Number(process.env['PORT'] ?? 3000)
// The application's pool, with its own default search_path: hookledger's tables are reached by
// the publisher, schema-qualified, never by the application's unqualified names.
const db = new Kysely<BookingsDatabase>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) }) })
await bookingsTableEnsure(db)
const schema = process.env['HOOKLEDGER_DB_SCHEMA'] || undefined
const app = createBookingsApp({ db, publisher: createPublisher(schema ? { schema } : {}) })
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => {
  console.log(`bookings example on http://127.0.0.1:${info.port} — POST /bookings {"guest":"Ada","starts_at":"2030-01-01T10:00:00Z"}`)
})
