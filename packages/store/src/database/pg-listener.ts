import pg from 'pg'

/** Port: subscribe to a NOTIFY channel. */
export interface Notifier {
  listen(channel: string, onNotify: () => void): Promise<void>
  close(): Promise<void>
}

/**
 * LISTEN on one dedicated (non-pooled) connection. A lost connection (a restart, an outage) is
 * reopened with backoff (0.5 s doubling to 10 s) for as long as it takes, re-LISTENs every
 * channel, and then calls every handler once: a notification sent while it was down is lost,
 * so the listeners look for work themselves. Notifications are only a nudge; the poll keeps
 * correctness without them.
 */
export function createPgNotifier(connectionString: string | (() => string), onError: (err: unknown) => void = () => {}): Notifier {
  const handlers = new Map<string, Set<() => void>>()
  let client: pg.Client | null = null
  let closed = false
  let connecting: Promise<pg.Client> | null = null
  let retryMs = 500
  let timer: NodeJS.Timeout | null = null

  const nudgeAll = () => handlers.forEach((set) => set.forEach((h) => h()))
  const scheduleReconnect = () => {
    if (closed || timer) return
    timer = setTimeout(() => {
      timer = null
      void ensure().then(nudgeAll, () => {})
    }, retryMs)
    timer.unref()
    retryMs = Math.min(retryMs * 2, 10_000)
  }

  const connect = async (): Promise<pg.Client> => {
    // A function: the host that is primary now, asked again at each reconnect (a failover).
    const c = new pg.Client({ connectionString: typeof connectionString === 'function' ? connectionString() : connectionString })
    c.on('notification', (msg) => handlers.get(msg.channel)?.forEach((h) => h()))
    c.on('error', (err) => {
      onError(err)
      if (client === c) client = null
      c.end().catch(() => {})
      scheduleReconnect()
    })
    try {
      await c.connect()
      for (const ch of handlers.keys()) await c.query(`listen ${pg.escapeIdentifier(ch)}`)
    } catch (err) {
      c.end().catch(() => {})
      throw err
    }
    if (closed) {
      await c.end().catch(() => {})
      throw new Error('notifier closed')
    }
    client = c
    retryMs = 500
    return c
  }
  const ensure = (): Promise<pg.Client> => {
    if (client) return Promise.resolve(client)
    // A failed attempt must not stick: the next call (or the scheduled retry) tries again.
    connecting ??= connect().finally(() => (connecting = null))
    return connecting.catch((err: unknown) => {
      onError(err)
      scheduleReconnect()
      throw err
    })
  }

  return {
    async listen(channel, onNotify) {
      const first = !handlers.has(channel)
      if (first) handlers.set(channel, new Set())
      handlers.get(channel)!.add(onNotify)
      // Unreachable now: the reconnect loop LISTENs when it gets through.
      const c = await ensure().catch(() => null)
      if (c && first) await c.query(`listen ${pg.escapeIdentifier(channel)}`).catch(onError)
    },
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      await client?.end().catch(() => {})
      client = null
    },
  }
}
