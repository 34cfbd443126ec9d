import { sql, type Generated, type Kysely } from 'kysely'

/** The application's own database: it knows nothing of hookledger's tables. */
export interface BookingsDatabase {
  bookings: BookingsTable
}

export interface BookingsTable {
  id: Generated<number>
  guest: string
  starts_at: Date
  created_at: Generated<Date>
}

/**
 * The application's table, in its own schema (`public`), beside hookledger's (`hookledger`).
 * A real application would use its own migrations; the example keeps it to one statement.
 */
export async function bookingsTableEnsure(db: Kysely<BookingsDatabase>): Promise<void> {
  await sql`
    create table if not exists public.bookings (
      id         bigint generated always as identity primary key,
      guest      text not null,
      starts_at  timestamptz not null,
      created_at timestamptz not null default now()
    )
  `.execute(db)
}
