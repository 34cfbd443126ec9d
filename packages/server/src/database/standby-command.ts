import { parseArgs } from 'node:util'
import pg from 'pg'
import { createStandby, EmbeddedDatabaseError } from '@hookledger/embedded'
import type { CliIo } from '@hookledger/cli'

/**
 * `db standby --from URL --data-dir D [--name N] [--port P]`: a streaming-replication standby
 * of the primary at URL (a superuser's; the primary on this machine: the low-level backup API
 * copies its files), started and left running. It prints the standby's port and the name to put
 * in the primary's `synchronous_standby_names` for synchronous replication.
 */
export async function standbyCommand(io: CliIo, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { from: { type: 'string' }, 'data-dir': { type: 'string' }, name: { type: 'string' }, port: { type: 'string' } },
  })
  if (!values.from || !values['data-dir']) {
    io.err('usage: hookledger db standby --from URL --data-dir D [--name N] [--port P]')
    return 2
  }
  const port = values.port === undefined ? undefined : Number(values.port)
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    io.err(`hookledger db standby: --port must be an integer from 1 to 65535, got "${values.port}"`)
    return 2
  }
  const source = new pg.Client({ connectionString: values.from })
  source.on('error', () => {})
  try {
    await source.connect()
    const standby = await createStandby({
      fromUrl: values.from,
      source: { query: async (text, params) => (await source.query(text, params)).rows },
      dataDir: values['data-dir'],
      ...(values.name ? { name: values.name } : {}),
      ...(port !== undefined ? { port } : {}),
    })
    io.out(`standby ${standby.name} streaming from ${new URL(values.from).host}, listening on ${new URL(standby.cluster.url()).host}, slot ${standby.slot}`)
    io.out(`synchronous replication: on the primary, alter system set synchronous_standby_names = '${standby.name}'; select pg_reload_conf();`)
    return 0
  } catch (err) {
    if (err instanceof EmbeddedDatabaseError || (err as { code?: string }).code) {
      io.err(`hookledger db standby: ${(err as Error).message}`)
      return 1
    }
    throw err
  } finally {
    await source.end().catch(() => {})
  }
}
