import pg from 'pg'

/** Port: subscribe to a NOTIFY channel; returns an unsubscribe function. */
export interface Notifier {
  listen(channel: string, onNotify: () => void): Promise<void>
  close(): Promise<void>
}

/**
 * LISTEN on one dedicated (non-pooled) connection. A lost connection is reopened after a
 * second; notifications are only a nudge, the poll keeps correctness without them.
 */
export function createPgNotifier(connectionString: string, onError: (err: unknown) => void = () => {}): Notifier {
  const handlers = new Map<string, Set<() => void>>()
  let client: pg.Client | null = null
  let closed = false
  let connecting: Promise<pg.Client> | null = null

  const connect = async (): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString })
    c.on('notification', (msg) => handlers.get(msg.channel)?.forEach((h) => h()))
    c.on('error', (err) => {
      onError(err)
      client = null
      connecting = null
      if (!closed) setTimeout(() => void ensure().catch(onError), 1000).unref()
    })
    await c.connect()
    for (const ch of handlers.keys()) await c.query(`listen ${pg.escapeIdentifier(ch)}`)
    client = c
    return c
  }
  const ensure = () => (client ? Promise.resolve(client) : (connecting ??= connect()))

  return {
    async listen(channel, onNotify) {
      const first = !handlers.has(channel)
      if (first) handlers.set(channel, new Set())
      handlers.get(channel)!.add(onNotify)
      const c = await ensure()
      if (first && client === c) await c.query(`listen ${pg.escapeIdentifier(channel)}`).catch(onError)
    },
    async close() {
      closed = true
      await client?.end().catch(() => {})
      client = null
    },
  }
}
