/**
 * Scenario `serve-drain`: the drain a user gets — a real `hookledger serve --role worker`
 * process, started with no settings but the database, the master key and the egress allow-list,
 * draining the drain scenario's work (200 events × 100 endpoints, published before it starts, so
 * it fans them out too) into the same receiver. Black-box, and timed as the in-process drain is,
 * from the database's own record: its first fan-out entry to its last completion (the in-process
 * figure adds its fan-out time to its first claim → last settle). The bench waits on the
 * receiver's count, not by polling the database the process is draining.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { encodeMasterKey } from '@hookledger/core'
import { createEndpoints, eventId, publish, waitCompleted } from './fixtures.js'
import { isCompletion, resetStatements, topStatements } from './drain-diagnostics.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { OWNER, PREPARE, PROFILE, QUICK, RESULTS_DIR, ROOT, STATS, cfg, targets } from './settings.js'
import { shared } from './shared.js'
import { round } from './util.js'

export async function serveDrainScenario({ env, progress }: ScenarioContext): Promise<ScenarioOutput> {
  const bdb = await freshDatabase(env, 'bench_serve_drain')
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-serve-'))
  const { db } = bdb
  try {
    progress.phase(`${cfg.endpoints} endpoints, ${cfg.drainEvents} events`)
    await createEndpoints(env, db, Array.from({ length: cfg.endpoints }, (_, i) => ({ owner_id: OWNER, url: env.receiver.url(`/serve/${i}`) })))
    for (let i = 0; i < cfg.drainEvents; i++) await publish(db, OWNER, eventId())
    const total = cfg.endpoints * cfg.drainEvents
    await env.receiver.reset()
    // --stats: the service's statements, as the in-process drain reports its own.
    if (STATS) await resetStatements(bdb.admin)
    progress.phase(`serve --role worker draining ${total.toLocaleString('en')} deliveries`, async () => `${(await env.receiver.call('count'))['count']} of ${total} arrived`)
    // --profile: the service's own CPU profile (written as it exits) beside the in-process drain's.
    const profiling = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, '--cpu-prof-name=serve-drain.cpuprofile'] : []
    const child = spawn(process.execPath, [...profiling, path.join(ROOT, 'node_modules/.bin/hookledger'), 'serve', '--role', 'worker'], {
      env: {
        ...process.env,
        DATABASE_URL: bdb.url,
        HOOKLEDGER_MASTER_KEY: encodeMasterKey(env.masterKey),
        HOOKLEDGER_EGRESS_ALLOW: '127.0.0.0/8',
        HOOKLEDGER_DATA_DIR: dataDir,
        ...(PREPARE ? {} : { HOOKLEDGER_DB_PREPARED_STATEMENTS: 'off' }),
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
      await env.receiver.waitFor(total, QUICK ? 60_000 : 600_000)
      // As the cluster's owner: the process set its roles' passwords when it started.
      await waitCompleted(bdb.admin, total, 30_000)
      if (STATS) await topStatements(bdb.admin)
      const span = (
        await sql<{ first: Date; last: Date }>`
          select min(occurred_at) filter (where kind = 'fanout.decided') as first, max(occurred_at) filter (where ${isCompletion()}) as last
          from ledger
        `.execute(bdb.admin)
      ).rows[0]!
      const seconds = Math.max(1, span.last.getTime() - span.first.getTime()) / 1000
      // Where the time went: the fan-out's span, and completions a quarter second, from the ledger.
      const shape = (
        await sql<{ fanout_ms: number | null; timeline: [number, number][] | null }>`
          with l as (select kind, payload, occurred_at, extract(epoch from occurred_at - ${span.first}::timestamptz) as t from ledger)
          select (select extract(epoch from max(occurred_at) - min(occurred_at)) * 1000 from l where kind = 'fanout.decided') as fanout_ms,
            (select json_agg(json_build_array(b, n) order by b) from (
              select (floor(t * 4) + 1) / 4 as b, count(*)::int as n from l where ${isCompletion()} group by 1) x) as timeline
        `.execute(bdb.admin)
      ).rows[0]!
      const perSec = total / seconds
      // The same work in process (the drain scenario, fan-out included), when it ran first.
      const inProcess = shared.drainWithFanoutPerSec
      const ratio = inProcess ? perSec / inProcess : null
      // And the in-process drain with the sealer at its default interval, as serve seals.
      const sealedRatio = shared.sealedWithFanoutPerSec ? perSec / shared.sealedWithFanoutPerSec : null
      return {
        metrics: {
          deliveries: total, endpoints: cfg.endpoints, seconds: round(seconds, 2), deliveries_per_sec: Math.round(perSec),
          fanout_ms: shape.fanout_ms === null ? null : Math.round(Number(shape.fanout_ms)),
          timeline_per_sec: (shape.timeline ?? []).map(([b, n]) => [Number(b), n * 4]),
          ...(ratio !== null ? { over_in_process_drain_with_fanout: round(ratio, 3) } : {}),
          ...(sealedRatio !== null ? { over_in_process_sealed_drain_with_fanout: round(sealedRatio, 3) } : {}),
        },
        rows: [
          { metric: 'serve --role worker (a process, default settings): deliveries/s incl. fan-out', value: String(Math.round(perSec)), target: '—', pass: null },
          ...(ratio !== null
            ? [{ metric: 'serve-drain ÷ in-process drain, both incl. fan-out', value: ratio.toFixed(2), target: `≥ ${targets.serveDrainRatio}`, pass: ratio >= targets.serveDrainRatio }]
            : []),
          ...(sealedRatio !== null
            ? [{ metric: 'serve-drain ÷ in-process drain with the sealer on (1 s, as serve seals)', value: sealedRatio.toFixed(2), target: '—', pass: null }]
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
