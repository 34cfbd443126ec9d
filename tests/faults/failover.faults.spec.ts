import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { eventually } from '@hookledger/testkit'
import { runCli } from '../e2e/cli-process.js'
import { FaultRig, VerifyingReceiver, faultEvents, publishOne, report, scaled, tally, type FaultEvent } from './fault-harness.js'
import { StandbyPair } from './standby-pair.js'

const ENDPOINTS = scaled(4, 8)
/** Published before the kill; as many again are published by a client through the failover. */
const EVENTS = scaled(150, 1_200)

/**
 * Publishes each event until it is acknowledged (202/200), as a client retrying a 503 would;
 * returns the ids acknowledged. Nothing else is counted as acknowledged.
 */
function publishThrough(url: string, token: string, events: FaultEvent[], paceMs: number) {
  const acknowledged = new Set<string>()
  const statuses = new Map<number | string, number>()
  /** When each publish was acknowledged, and when each request was sent (performance.now()). */
  const ackedAt: number[] = []
  const sentAt: number[] = []
  const done = (async () => {
    for (const e of events) {
      await new Promise((r) => setTimeout(r, paceMs))
      for (;;) {
        sentAt.push(performance.now())
        const status = await publishOne(url, token, e)
          .then(async (res) => (await res.arrayBuffer(), res.status))
          .catch((err: Error) => `fetch failed: ${err.message}`)
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        if (status === 202 || status === 200) {
          acknowledged.add(e.id)
          ackedAt.push(performance.now())
          break
        }
        await new Promise((r) => setTimeout(r, 100))
      }
    }
  })()
  return { acknowledged, statuses, ackedAt, sentAt, done }
}

describe('the primary dies mid-drain and its synchronous standby takes over', () => {
  const rig = new FaultRig()
  const pair = new StandbyPair(rig)
  const receiver = new VerifyingReceiver({ delayMs: 20 })
  afterAll(async () => {
    await receiver.close()
    await pair.close()
    await rig.close()
  })

  it('kill -9 of the primary, pg_promote on the standby: 0 acknowledged publishes lost, 0 deliveries lost, one in flight per endpoint, the ledger verifies', async () => {
    const began = performance.now()
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, ENDPOINTS)
    await pair.open({ synchronous: true })
    const events = faultEvents(EVENTS * 2, ENDPOINTS)
    const env = rig.env({ DATABASE_URL: pair.bothHosts(rig.databaseUrl()) })
    const serve = await rig.serve([], env)
    const token = await rig.token(['admin', 'publish'])
    await rig.publishViaApi(serve.url, token, events.slice(0, EVENTS))
    await eventually('a third of the drain', () => tally(receiver, events).delivered >= EVENTS / 3)

    // A client keeps publishing while the primary dies and the standby is promoted.
    // Paced so that it is still publishing when the primary dies and after the promotion.
    const client = publishThrough(serve.url, token, events.slice(EVENTS), 20)
    await eventually('the client publishing', () => client.acknowledged.size >= 10)
    const deliveredAtKill = tally(receiver, events).delivered
    await pair.killPrimary()
    const killedAt = performance.now()
    await pair.promote()
    const promotedAt = performance.now()
    await client.done
    // From the promotion to the first publish the service acknowledged on the promoted primary.
    const followedMs = Math.round((client.ackedAt.find((t) => t > promotedAt) ?? Number.NaN) - promotedAt)
    const refusedWhileDown = [...client.statuses].filter(([s]) => s !== 202 && s !== 200).reduce((n, [, c]) => n + c, 0)

    let remaining: number | null = null
    try {
      await eventually('every acknowledged event delivered and every delivery completed', async () => {
        const { rows } = await sql<{ open: string; all: string }>`select count(*) filter (where state <> 'completed') as open, count(*) as all from deliveries`.execute(pair.db)
        remaining = Number(rows[0]!.open)
        return tally(receiver, events).lost === 0 && Number(rows[0]!.all) === events.length && remaining === 0
      }, { timeoutMs: scaled(90_000, 300_000), everyMs: 250 })
    } finally {
      const api = [...client.statuses].map(([status, n]) => `${status}:${n}`).join(',')
      report('failover-sync', tally(receiver, events), { acknowledged: EVENTS + client.acknowledged.size, delivered_at_kill: deliveredAtKill, outage_ms: Math.round(promotedAt - killedAt), refused_while_down: refusedWhileDown, followed_ms: followedMs, remaining: remaining ?? 'unknown', api, seconds: ((performance.now() - began) / 1000).toFixed(1) })
    }
    // Every acknowledged publish is in the promoted primary's events.
    const { rows } = await sql<{ id: string }>`select id from events`.execute(pair.db)
    const kept = new Set(rows.map((r) => r.id))
    expect(events.filter((e) => !kept.has(e.id)).map((e) => e.id)).toEqual([])
    const result = tally(receiver, events)
    // The fault really was mid-drain and mid-publish, and the service followed the promotion.
    expect(deliveredAtKill).toBeLessThan(events.length)
    // Publishes were sent while the primary was down: refused (503), or held until the promoted
    // one answered (a promotion of ~100 ms is shorter than the pool's wait for a connection).
    expect(refusedWhileDown + client.sentAt.filter((t) => t >= killedAt && t <= promotedAt).length).toBeGreaterThan(0)
    expect(followedMs).toBeGreaterThanOrEqual(0)
    expect(result.lost).toBe(0)
    expect(result.maxInFlightPerEndpoint, await rig.describeOverlaps(receiver)).toBe(1)
    expect([...client.statuses.keys()].filter((s) => s !== 202 && s !== 200 && s !== 503), serve.output()).toEqual([])
    expect(serve.exited(), serve.output()).toBe(false)
    expect(await rig.terminate(serve), serve.output()).toBe(0)

    // The promoted primary's ledger: the chain, every checkpoint (a signed one never covers a
    // row the standby lacked: the checkpoint's commit was on it) and a replay of the projections.
    const verify = await runCli(['ledger', 'verify'], env)
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    const replay = await runCli(['ledger', 'replay', '--verify'], env)
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    expect(replay.stdout).toContain('no differences')
  })
})

describe('the primary dies while its asynchronous standby lags, and the standby takes over', () => {
  const rig = new FaultRig()
  const pair = new StandbyPair(rig)
  const receiver = new VerifyingReceiver()
  afterAll(async () => {
    await receiver.close()
    await pair.close()
    await rig.close()
  })

  it('ledger verify --since the last checkpoint the primary signed names the span signed after the standby\'s last checkpoint, every vanished row in it', async () => {
    await rig.open()
    await receiver.start()
    await rig.createEndpoints(receiver, ENDPOINTS)
    await pair.open({ synchronous: false })
    const events = faultEvents(scaled(60, 400), ENDPOINTS)
    const env = rig.env({ DATABASE_URL: pair.bothHosts(rig.databaseUrl()) })
    const serve = await rig.serve([], env)
    const token = await rig.token(['admin', 'publish'])
    const half = events.length / 2
    await rig.publishViaApi(serve.url, token, events.slice(0, half))
    const newestTotal = async (run: (text: string) => Promise<{ total: string }[]>) =>
      Number((await run('select coalesce(max(total), 0)::text as total from ledger_checkpoints where tree_note is not null'))[0]!.total)
    const onPrimary = async <R extends Record<string, unknown>>(text: string) => (await sql.raw<R>(text).execute(rig.db)).rows
    // The standby has a checkpoint covering the first half, then is cut off.
    await eventually('the standby to hold a checkpoint', async () => (await newestTotal((t) => pair.onStandby(t))) > 0)
    await pair.cutStandbyOff()
    const standbyTotal = await newestTotal((t) => pair.onStandby(t))
    // The primary goes on: publishes, deliveries and checkpoints the standby never gets.
    await rig.publishViaApi(serve.url, token, events.slice(half))
    await eventually('the primary to sign a checkpoint beyond the standby\'s', async () => (await newestTotal(onPrimary)) > standbyTotal + half)
    // What an auditor (or a witness) kept: the newest checkpoint the primary signed.
    const saved = (await onPrimary<{ total: string; tree_note: string }>('select total::text as total, tree_note from ledger_checkpoints where tree_note is not null order by seq desc limit 1'))[0]!
    const savedTotal = Number(saved.total)
    const signedAfter = (await onPrimary<{ position: string }>(`select unnest(leaf_positions)::text as position from ledger_checkpoints where total > ${standbyTotal} and total <= ${savedTotal}`)).map((r) => r.position)
    const notePath = path.join(rig.root, 'saved-checkpoint.note')
    writeFileSync(notePath, saved.tree_note)

    await rig.kill9(serve)
    await pair.killPrimary()
    await pair.promote()

    const { rows } = await sql<{ position: string }>`select position::text as position from ledger`.execute(pair.db)
    const kept = new Set(rows.map((r) => r.position))
    const vanished = signedAfter.filter((p) => !kept.has(p))
    const verify = await runCli(['ledger', 'verify', '--since', notePath, '--json'], env)
    expect(verify.code, verify.stdout + verify.stderr).toBe(1)
    const report = JSON.parse(verify.stdout.trim().split('\n').at(-1)!) as { tree: { size: number; problems: { kind: string; lost?: { from: number; to: number; rows: number } }[] }; chain: { ok: boolean } }
    console.log(`faults: failover-async scale=${scaled('small', 'full')} standby_checkpoint_rows=${standbyTotal} saved_checkpoint_rows=${savedTotal} vanished_signed_rows=${vanished.length} reported=${JSON.stringify(report.tree.problems.map((p) => p.lost ?? p.kind))}`)
    // Everything the standby's last checkpoint covered is intact; the loss window is the rows
    // signed after it, and verify names that span and no other. Every row that vanished is in
    // it. Most runs, all of them vanished; but rows the standby received after its last
    // checkpoint, before the cut, are still there, unprovable (their checkpoint was signed on
    // the primary alone): seen once in a full parallel fault run, 69 of 311.
    expect(report.chain.ok).toBe(true)
    expect(report.tree.size).toBe(standbyTotal)
    expect(vanished.length).toBeGreaterThan(0)
    expect(signedAfter).toEqual(expect.arrayContaining(vanished))
    expect(report.tree.problems).toEqual([expect.objectContaining({ kind: 'rolled_back', lost: expect.objectContaining({ from: standbyTotal, to: savedTotal, rows: signedAfter.length }) })])
  })
})
