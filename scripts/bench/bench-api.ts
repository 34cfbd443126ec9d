/**
 * The real API for a bench scenario: the server's own `startService` with `role: 'api'` (what
 * `serve --role api` runs: its pool, auth, validation, the publish transaction) on a loopback
 * port over the scenario's database, a publish token per owner named and an operator token.
 * The service re-keys the database's roles as it starts (its own master key): the scenario's
 * own pool may not open new connections after this, so it talks to the service instead.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { encodeMasterKey, generateMasterKey } from '@hookledger/core'
import { generateLedgerSigningKey } from '@hookledger/ledger'
import { apiTokenCreate, type Db } from '@hookledger/store'
import { createLogger, loadConfig, startService } from '@hookledger/server'

export interface BenchApi {
  /** `POST /api/events` of this service. */
  readonly eventsUrl: string
  /** Request headers (bearer, JSON) publishing as `owner`. */
  headersOf(owner: string): Record<string, string>
  /** `PUT /api/operator/owners/:owner/limits` with `limits`; throws unless 200. */
  setOwnerLimits(owner: string, limits: Record<string, number | null>): Promise<void>
  close(): Promise<void>
}

export async function startBenchApi(db: Db, url: string, owners: readonly string[]): Promise<BenchApi> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-bench-api-'))
  const headers = new Map<string, Record<string, string>>()
  let operator = ''
  let service: Awaited<ReturnType<typeof startService>> | null = null
  try {
    // Tokens first, so the service's first start prints none.
    for (const owner of owners) {
      const { token } = await apiTokenCreate(db, { owner_id: owner, scopes: ['publish'], label: 'bench', now: new Date() })
      headers.set(owner, { authorization: `Bearer ${token}`, 'content-type': 'application/json' })
    }
    operator = (await apiTokenCreate(db, { owner_id: '*', scopes: ['operator'], label: 'bench', now: new Date() })).token
    const config = loadConfig({
      DATABASE_URL: url,
      PORT: '0',
      HOST: '127.0.0.1',
      HOOKLEDGER_DATA_DIR: dataDir,
      HOOKLEDGER_MASTER_KEY: encodeMasterKey(generateMasterKey()),
      HOOKLEDGER_LEDGER_SIGNING_KEY: generateLedgerSigningKey().secret,
      LOG_LEVEL: 'silent',
    })
    service = await startService(config, { role: 'api', log: createLogger(config), out: () => {} })
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true })
    throw err
  }
  const running = service
  return {
    eventsUrl: `${running.url}/api/events`,
    headersOf: (owner) => {
      const h = headers.get(owner)
      if (!h) throw new Error(`no publish token for owner ${owner}`)
      return h
    },
    setOwnerLimits: async (owner, limits) => {
      const res = await fetch(`${running.url}/api/operator/owners/${encodeURIComponent(owner)}/limits`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
        body: JSON.stringify(limits),
      })
      if (res.status !== 200) throw new Error(`PUT limits of ${owner}: ${res.status} ${await res.text()}`)
    },
    close: async () => {
      await running.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
