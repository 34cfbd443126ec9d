// Probe: per-request cost of the layers of the HTTP client stack against the bench receiver.
import { fork } from 'node:child_process'
import * as http from 'node:http'
import path from 'node:path'
import { createEgressPolicy, createSecretBox, generateMasterKey, generateWebhookSecret, secretKeyId, signWebhook, systemClock } from '@hookledger/core'
import { createHttpTransport, executeDelivery } from '@hookledger/worker'

const child = fork(path.resolve('scripts/bench-receiver.mjs'), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
const port: number = await new Promise((r) => child.once('message', (m: any) => r(m.port)))
const C = Number(process.env.C ?? 100), N = Number(process.env.N ?? 20000)
async function run(name: string, one: (i: number) => Promise<unknown>) {
  let next = 0
  const w = async (slot: number) => { while (next < N) { next++; await one(slot) } }
  await Promise.all(Array.from({ length: C }, (_, i) => one(i)))
  const t = performance.now()
  await Promise.all(Array.from({ length: C }, (_, i) => w(i)))
  const ms = performance.now() - t
  console.log(name, Math.round(N / ms * 1000), 'req/s')
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 })
const body = JSON.stringify({ id: 'evt_1', type: 'booking.created', subject: 'booking://1', occurred_at: new Date().toISOString(), data: { booking_id: 'x' } })
const raw = (i: number) => new Promise<void>((resolve, reject) => {
  const req = http.request({ host: '127.0.0.1', port, path: `/ep/${i}`, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => { res.resume(); res.on('end', () => resolve()) })
  req.on('error', reject); req.end(body)
})
const transport = createHttpTransport({ policy: createEgressPolicy({ allow: ['127.0.0.0/8'] }) })
const secret = generateWebhookSecret()
const box = createSecretBox(generateMasterKey())
const sealed = box.seal(secret)
const viaTransport = (i: number) => transport.post({ url: `http://127.0.0.1:${port}/ep/${i}`, headers: signWebhook({ id: 'evt_1', timestamp: 1, body, secrets: [secret] }).headers as any, body })
const t = new Date()
const claim = (i: number) => ({ endpoint: { id: 'e', owner_id: 'o', url: `http://127.0.0.1:${port}/ep/${i}`, description: '', event_types: ['*'], embed_id: null, secret_sealed: sealed, secret_key_id: secretKeyId(secret), prev_secret_sealed: null, prev_secret_key_id: null, prev_secret_expires_at: null, enabled: true, disabled_reason: null, failing_since: null, busy_until: null, busy_delivery_id: null, deleted_at: null, created_at: t, updated_at: t }, event: { id: 'evt_1', type: 'booking.created', subject: 'b://1', occurred_at: t, data: {} }, delivery: { id: 'd', owner_id: 'o', endpoint_id: 'e', event_id: 'evt_1', event_type: 'booking.created', state: 'running', run: 1, run_started_at: t, attempts: 0, next_attempt_at: t, claimed_by: 'w', lease_until: t, last_status: null, last_error: null, created_at: t, updated_at: t } }) as any
const claims = Array.from({ length: C }, (_, i) => claim(i))
const deps = { clock: systemClock, transport, secretBox: box, actor: 'w' }
for (let k = 0; k < 2; k++) {
  await run('raw http', raw)
  await run('transport.post', viaTransport)
  await run('executeDelivery', (i) => executeDelivery(claims[i], deps))
}
let s = performance.now(); for (let i = 0; i < 10000; i++) box.open(sealed); console.log('secretBox.open µs', (performance.now() - s) / 10)
s = performance.now(); for (let i = 0; i < 10000; i++) signWebhook({ id: 'evt_1', timestamp: 1, body, secrets: [secret] }); console.log('sign µs', (performance.now() - s) / 10)
child.kill(); await transport.close(); agent.destroy()
