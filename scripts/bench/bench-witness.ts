/**
 * One local witness for the bench (@hookledger/witness over loopback, its state in a temp
 * file), and what the cosign lag was: from a checkpoint's signing to its cosignature kept.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { serve } from '@hono/node-server'
import { sql } from 'kysely'
import { systemClock } from '@hookledger/core'
import { ledgerVerifierKey, logOriginEnsure, parseTlogPolicy, type LedgerSigningKey } from '@hookledger/ledger'
import type { Db } from '@hookledger/store'
import { WitnessSubmitter } from '@hookledger/worker'
import { percentileMs } from './util.js'
import { createWitnessApp, openWitnessStateFile, witnessKeyInfo } from '@hookledger/witness'

export async function startBenchWitness(db: Db) {
  const origin = await logOriginEnsure(db, undefined)
  const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-witness-'))
  const state = await openWitnessStateFile(path.join(dir, 'state.json'))
  const key = { name: 'bench.witness/w1', seed: new Uint8Array(randomBytes(32)) }
  let server: ReturnType<typeof serve> | null = null
  let app: ReturnType<typeof createWitnessApp> | null = null
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: (req) => app!.fetch(req), port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port))
  })
  return {
    submitter(logKey: LedgerSigningKey) {
      app = createWitnessApp({ key, logs: [ledgerVerifierKey(origin, logKey.publicKey)], state, clock: systemClock })
      const policy = parseTlogPolicy(`witness w1 ${witnessKeyInfo(key).vkey} http://127.0.0.1:${port}\nquorum w1\n`)
      return new WitnessSubmitter({ db, witnesses: [...policy.witnesses.values()], clock: systemClock })
    },
    /**
     * Checkpoint → cosignature, for the checkpoints signed from `since` on (the drain's own; the
     * history sealed before the drain waits for the sealer loop to start, which is not a lag).
     */
    async lag(since: Date): Promise<{ p50Ms: number; p99Ms: number; cosigned: number }> {
      const rows = (
        await sql<{ ms: number }>`
          select (extract(epoch from w.cosigned_at - min(c.created_at::timestamptz)) * 1000)::float8 as ms
          from ledger_cosignatures w join ledger_checkpoints c on c.total = w.tree_size and c.tree_note is not null
          group by w.tree_size, w.cosigned_at
          having min(c.created_at::timestamptz) >= ${since.toISOString()}::timestamptz
        `.execute(db)
      ).rows.map((r) => Math.max(0, r.ms))
      return { p50Ms: percentileMs(rows, 50), p99Ms: percentileMs(rows, 99), cosigned: rows.length }
    },
    close() {
      ;(server as { close(): void } | null)?.close()
      void state.close?.()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
