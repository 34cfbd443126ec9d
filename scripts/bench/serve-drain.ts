/**
 * Scenario `serve-drain`: the drain a user gets — a real `hookledger serve --role worker`
 * process, started with no settings but the database, the master key and the egress allow-list,
 * draining the peer scenario's deliveries (100 events × 100 endpoints, published before it starts,
 * so its time includes the fan-out) into the same receiver. Timed from "worker started" to the
 * last delivery completed (read from the database every 50 ms). Black-box: what the README's
 * in-process figures must agree with.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { encodeMasterKey } from '@hookledger/core'
import { createEndpoints, eventId, publish } from './fixtures.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, ROOT, cfg } from './settings.js'
import { shared } from './shared.js'
import { round } from './util.js'

export async function serveDrainScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_serve_drain')
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-serve-'))
  const { db } = bdb
  try {
    progress.phase(`${cfg.endpoints} endpoints, ${cfg.peerEvents} events`)
    await createEndpoints(env, db, Array.from({ length: cfg.endpoints }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/serve/${i}`) })))
    for (let i = 0; i < cfg.peerEvents; i++) await publish(db, OWNER, eventId())
    const total = cfg.endpoints * cfg.peerEvents
    let done = 0
    progress.phase(`serve --role worker draining ${total.toLocaleString('en')} deliveries`, () => `${done} of ${total} completed`)
    const child = spawn(path.join(ROOT, 'node_modules/.bin/hookledger'), ['serve', '--role', 'worker'], {
      env: {
        ...process.env,
        DATABASE_URL: bdb.url,
        HOOKLEDGER_MASTER_KEY: encodeMasterKey(env.masterKey),
        HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
        HOOKLEDGER_DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<number | null>((r) => child.on('close', r))
    try {
      await new Promise<void>((resolve, reject) => {
        let out = ''
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString()
          if (out.includes('hookledger worker started')) resolve()
        })
        child.on('close', (code) => reject(new Error(`serve exited ${code} before starting:\n${out}`)))
      })
      const started = performance.now()
      for (;;) {
        done = Number((await sql<{ n: string }>`select count(*) as n from deliveries where state = 'completed'`.execute(db)).rows[0]!.n)
        if (done >= total) break
        if (performance.now() - started > 600_000) throw new Error(`only ${done} of ${total} completed in 10 min`)
        await new Promise((r) => setTimeout(r, 50))
      }
      const seconds = (performance.now() - started) / 1000
      const perSec = total / seconds
      // The same work in process (the drain scenario, fan-out included), when it ran first.
      const inProcess = shared.drainWithFanoutPerSec
      const ratio = inProcess ? perSec / inProcess : null
      return {
        metrics: {
          deliveries: total, endpoints: cfg.endpoints, seconds: round(seconds, 2), deliveries_per_sec: Math.round(perSec),
          ...(ratio !== null ? { over_in_process_drain_with_fanout: round(ratio, 3) } : {}),
        },
        rows: [
          { metric: 'serve --role worker (a process, default settings): deliveries/s incl. fan-out', value: String(Math.round(perSec)), target: '—', pass: null },
          ...(ratio !== null
            ? [{ metric: 'serve-drain ÷ in-process drain, both incl. fan-out', value: ratio.toFixed(2), target: '≥ 0.9', pass: ratio >= 0.9 }]
            : []),
        ],
      }
    } finally {
      child.kill('SIGTERM')
      await exited
    }
  } finally {
    await bdb.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
