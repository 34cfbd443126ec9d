/**
 * The sealer thread's composition root: its own one-connection pool, the signing key it was
 * handed, and a seal per request. Hashing ~10,000 rows a second is ~100 ms of CPU the delivering
 * thread no longer spends (ledger-sealer-loop.ts asks; this thread reads, hashes and appends).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { ledgerSeal } from '@hookledger/ledger'
import { createDb, servicePool } from '@hookledger/store'
import { errorShape, type SealerThreadData, type SealReply, type SealRequest } from './sealer-thread-messages.js'

const data = workerData as SealerThreadData
const port = parentPort!
const pool = servicePool(data.url, { max: 1, connectionTimeoutMillis: 10_000 })
// A connection the server drops (restart, failover) fails the seal in flight, never the thread.
pool.on('error', () => {})
pool.on('connect', (client: { on(event: 'error', listener: () => void): void }) => client.on('error', () => {}))
const db = createDb(pool, { schema: data.schema })

const reply = (message: SealReply) => port.postMessage(message)

port.on('message', (request: SealRequest | 'close') => {
  if (request === 'close') {
    void db.destroy().finally(() => port.close())
    return
  }
  ledgerSeal(db, {
    key: data.key,
    now: new Date(request.now),
    ...(request.force ? { force: true } : {}),
    onCheckpoint: (checkpoint) => reply({ id: request.id, checkpoint }),
  }).then(
    (sealed) => reply({ id: request.id, done: { rows: sealed.rows } }),
    (err: unknown) => reply({ id: request.id, error: errorShape(err) }),
  )
})
