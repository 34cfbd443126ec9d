/**
 * A canonical, sorted text description of one schema, read from pg_catalog: two databases with
 * the same fingerprint have the same tables, columns, constraints, indexes, views, functions,
 * triggers, storage parameters, partitions, owners, grants and default privileges (not the same
 * rows).
 *
 *     npx tsx --conditions=source scripts/schema-fingerprint.ts <database-url> [schema]
 *
 * `schema` defaults to `hookledger`. Diff two outputs to compare, e.g., a database migrated by
 * one chain of migrations with one migrated by another.
 */
import { pathToFileURL } from 'node:url'
import pg from 'pg'

type Row = Record<string, unknown>

/** Every entry of the fingerprint as `[sort key, text]`, sorted by key. */
export async function schemaFingerprint(client: pg.ClientBase, schema: string): Promise<string> {
  const q = async (text: string): Promise<Row[]> => (await client.query(text, [schema])).rows
  const entries: Array<[string, string]> = []
  const add = (key: string, text: string) => entries.push([key, text])
  // aclitem[] in a stable order (grant order is not part of what the schema is).
  const acl = (v: unknown) => (v === null || v === undefined ? 'default' : String(v).replace(/^\{|\}$/g, '').split(',').sort().join(' '))

  // Relations: kind, owner, persistence, storage parameters, partitioning, grants.
  for (const r of await q(`
    select c.oid, c.relname::text as name, c.relkind::text as kind, c.relowner::regrole::text as owner,
           c.relpersistence::text as persistence, c.reloptions::text as options, c.relacl::text as acl,
           c.relrowsecurity as rls,
           case when c.relkind = 'p' then pg_get_partkeydef(c.oid) end as partkey,
           case when c.relispartition then pg_get_expr(c.relpartbound, c.oid) end as bound,
           (select p.relname::text from pg_inherits i join pg_class p on p.oid = i.inhparent where i.inhrelid = c.oid) as parent
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f', 'c')
  `)) {
    const parts = [`kind=${r['kind']}`, `owner=${r['owner']}`, `persistence=${r['persistence']}`, `options=${r['options'] ?? '-'}`, `acl=${acl(r['acl'])}`]
    if (r['rls']) parts.push('row-level-security')
    if (r['partkey']) parts.push(`partition-key=${r['partkey']}`)
    if (r['parent']) parts.push(`partition-of=${r['parent']} ${r['bound']}`)
    add(`relation ${r['name']}`, `relation ${r['name']}: ${parts.join(' ')}`)
  }

  // Columns, in their order (`select *` and jsonb_populate_record depend on it).
  for (const r of await q(`
    select c.relname::text as rel, a.attname::text as name,
           row_number() over (partition by c.oid order by a.attnum) as ordinal,
           format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as notnull,
           pg_get_expr(d.adbin, d.adrelid) as dflt, a.attidentity::text as identity, a.attgenerated::text as generated,
           (select co.collname::text from pg_collation co where co.oid = a.attcollation and a.attcollation <> t.typcollation) as collation,
           a.attacl::text as acl
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    join pg_type t on t.oid = a.atttypid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm', 'f') and a.attnum > 0 and not a.attisdropped
  `)) {
    const parts = [String(r['type'])]
    if (r['notnull']) parts.push('not null')
    if (r['dflt'] !== null) parts.push(`default ${r['dflt']}`)
    if (r['identity']) parts.push(`identity ${r['identity'] === 'a' ? 'always' : 'by default'}`)
    if (r['generated']) parts.push(`generated ${r['generated']}`)
    if (r['collation']) parts.push(`collate ${r['collation']}`)
    if (r['acl']) parts.push(`acl=${acl(r['acl'])}`)
    const ordinal = String(r['ordinal']).padStart(3, '0')
    add(`relation ${r['rel']} column ${ordinal}`, `  column ${r['rel']}.${r['name']} #${Number(r['ordinal'])}: ${parts.join(' ')}`)
  }

  // Sequences (identity columns own theirs).
  for (const r of await q(`
    select c.relname::text as name, format_type(s.seqtypid, null) as type, s.seqstart, s.seqincrement, s.seqmin, s.seqmax,
           s.seqcache, s.seqcycle,
           (select t.relname || '.' || a.attname from pg_depend dp join pg_class t on t.oid = dp.refobjid
              join pg_attribute a on a.attrelid = dp.refobjid and a.attnum = dp.refobjsubid
            where dp.classid = 'pg_class'::regclass and dp.objid = c.oid and dp.deptype in ('a', 'i') limit 1) as owned_by
    from pg_sequence s join pg_class c on c.oid = s.seqrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1
  `)) {
    add(
      `relation ${r['name']} sequence`,
      `  sequence ${r['name']}: ${r['type']} start ${r['seqstart']} increment ${r['seqincrement']} min ${r['seqmin']} max ${r['seqmax']} cache ${r['seqcache']}${r['seqcycle'] ? ' cycle' : ''} owned-by ${r['owned_by'] ?? '-'}`,
    )
  }

  // Constraints (not-null ones too, on PostgreSQL 18).
  for (const r of await q(`
    select c.relname::text as rel, co.conname::text as name, co.contype::text as type,
           pg_get_constraintdef(co.oid) as def, co.convalidated as validated,
           (select p.conname::text from pg_constraint p where p.oid = co.conparentid) as parent
    from pg_constraint co join pg_class c on c.oid = co.conrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1
  `)) {
    add(
      `relation ${r['rel']} constraint ${r['name']}`,
      `  constraint ${r['rel']}.${r['name']} (${r['type']}): ${r['def']}${r['validated'] ? '' : ' NOT VALID'}${r['parent'] ? ` [of ${r['parent']}]` : ''}`,
    )
  }

  // Indexes, and the parent index a partition's index is attached to.
  for (const r of await q(`
    select t.relname::text as rel, i.relname::text as name, pg_get_indexdef(i.oid) as def, i.reloptions::text as options,
           x.indisvalid as valid,
           (select p.relname::text from pg_inherits h join pg_class p on p.oid = h.inhparent where h.inhrelid = i.oid) as parent
    from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
    join pg_namespace n on n.oid = i.relnamespace
    where n.nspname = $1
  `)) {
    add(
      `relation ${r['rel']} index ${r['name']}`,
      `  index ${r['name']}: ${r['def']}${r['options'] ? ` options=${r['options']}` : ''}${r['valid'] ? '' : ' INVALID'}${r['parent'] ? ` [attached to ${r['parent']}]` : ''}`,
    )
  }

  // Views.
  for (const r of await q(`
    select c.relname::text as name, pg_get_viewdef(c.oid, true) as def
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1 and c.relkind in ('v', 'm')
  `)) {
    add(`relation ${r['name']} view`, `  view ${r['name']} as\n${r['def']}`)
  }

  // Triggers (those on partitions cloned from the parent's too; not the internal ones of foreign keys).
  for (const r of await q(`
    select c.relname::text as rel, t.tgname::text as name, pg_get_triggerdef(t.oid) as def, t.tgenabled::text as enabled,
           t.tgparentid <> 0 as cloned
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1 and not t.tgisinternal
  `)) {
    add(
      `relation ${r['rel']} trigger ${r['name']}`,
      `  trigger ${r['rel']}.${r['name']}: ${r['def']} enabled=${r['enabled']}${r['cloned'] ? ' [cloned from the parent]' : ''}`,
    )
  }

  // Functions: the whole definition, and explicitly what makes them a door.
  for (const r of await q(`
    select p.oid::regprocedure::text as sig, pg_get_functiondef(p.oid) as def, p.prosecdef as secdef,
           p.proconfig::text as config, p.proowner::regrole::text as owner, p.proacl::text as acl
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = $1
  `)) {
    add(
      `routine ${r['sig']}`,
      `routine ${r['sig']}: owner=${r['owner']} security-definer=${r['secdef']} config=${r['config'] ?? '-'} acl=${acl(r['acl'])}\n${String(r['def']).trimEnd()}`,
    )
  }

  // Types of their own (not a relation's row type, not an array).
  for (const r of await q(`
    select t.typname::text as name, t.typtype::text as type, format_type(t.oid, null) as formatted,
           (select string_agg(e.enumlabel, ',' order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid) as labels
    from pg_type t join pg_namespace n on n.oid = t.typnamespace
    where n.nspname = $1 and t.typrelid = 0 and t.typelem = 0
  `)) {
    add(`type ${r['name']}`, `type ${r['name']}: ${r['type']} ${r['labels'] ?? ''}`)
  }

  // Default privileges in the schema (what objects made later, e.g. partitions, are granted).
  for (const r of await q(`
    select d.defaclrole::regrole::text as role, d.defaclobjtype::text as type, d.defaclacl::text as acl
    from pg_default_acl d join pg_namespace n on n.oid = d.defaclnamespace
    where n.nspname = $1
  `)) {
    add(`default-acl ${r['role']} ${r['type']}`, `default privileges of ${r['role']} on ${r['type']}: ${acl(r['acl'])}`)
  }

  const owner = (await q(`select nspowner::regrole::text as owner, nspacl::text as acl from pg_namespace where nspname = $1`))[0]
  if (!owner) throw new Error(`no schema ${schema}`)
  add('', `schema ${schema}: owner=${owner['owner']} acl=${acl(owner['acl'])}`)
  return entries
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, text]) => text)
    .join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [url, schema = 'hookledger'] = process.argv.slice(2)
  if (!url) {
    console.error('usage: schema-fingerprint.ts <database-url> [schema]')
    process.exit(2)
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    console.log(await schemaFingerprint(client, schema))
  } finally {
    await client.end()
  }
}
