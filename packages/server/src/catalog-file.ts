/**
 * `HOOKLEDGER_CATALOG_FILE`, kept working on top of the database catalog: at start, each entry
 * of the file that is not declared yet is declared (an `event_type.declared` entry by `system`),
 * so the publisher — which reads the database, not the file — accepts what the service does.
 * An entry that differs from its declared row changes nothing: the database is the catalog, and
 * a change goes through `event_types.update` (a warning says so). Built-ins in the file are
 * accepted and ignored, as before.
 */
import { eventCatalogFileSchema, type EventCatalog, type Logger } from '@hookledger/core'
import { eventTypeDeclare, eventTypeRows, type Db } from '@hookledger/store'

export async function catalogFileDeclare(db: Db, base: EventCatalog, entries: readonly unknown[], now: Date, log: Logger): Promise<{ declared: string[] }> {
  // Validated at start (loadConfig): parsing again only applies the defaults.
  const file = eventCatalogFileSchema.parse(entries)
  if (file.length === 0) return { declared: [] }
  const rows = new Map((await eventTypeRows(db, file.map((e) => e.type))).map((r) => [r.name, r]))
  const declared: string[] = []
  for (const entry of file) {
    if (base.isBuiltin(entry.type)) continue
    const row = rows.get(entry.type)
    if (row) {
      if (row.exposure !== entry.exposure || row.description !== entry.description || row.group !== entry.group) {
        log.warn({ event_type: entry.type, file: { exposure: entry.exposure, group: entry.group }, declared: { exposure: row.exposure, group: row.group } },
          'catalog_file:differs (the declared type is kept; change it with PATCH /api/operator/event_types/:name)')
      }
      continue
    }
    const change = await eventTypeDeclare(db, base, { now, actor: 'system' }, { name: entry.type, description: entry.description, exposure: entry.exposure, group: entry.group, schema: null })
    // Another process starting at once declared it first: the same file, the same type.
    if ('refusal' in change && change.refusal.code !== 'event_type_exists') throw new Error(`${entry.type}: ${change.refusal.message}`)
    if ('row' in change) declared.push(entry.type)
  }
  if (declared.length > 0) log.info({ declared }, 'catalog_file:declared')
  return { declared }
}
