/**
 * The README's tour, run as written: its first shell block split at its "# Terminal N" lines —
 * the service (`npm start` with the allow-list the tour sets), then the second terminal's
 * commands in bash (a `hookledger listen` in the background, an endpoint, an event, `wait`) — on
 * free ports instead of 8787 and 9000 and a data dir of the test's own. It must end as the tour
 * says: the receiver prints a signature-verified arrival and exits.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '@hookledger/embedded'
import { eventually, removeDataDir } from '@hookledger/testkit'
import pg from 'pg'
import { ROOT, runCli } from './cli-process.js'

const dataDir = mkdtempSync(path.join(tmpdir(), 'hookledger-tour-'))
const running: ChildProcess[] = []
afterAll(async () => {
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGTERM')
    } catch {}
  }
  await Promise.all(running.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('close', r)))))
  removeDataDir(dataDir)
})

/** What a `hookledger` command prints on stdout, trimmed (it must succeed). */
async function hookledgerOut(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const result = await runCli(args, env)
  expect(result.code, result.stderr).toBe(0)
  return result.stdout.trim()
}

/** The tour's first ```sh block, by terminal. */
function tourTerminals(): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const tour = readme.slice(readme.indexOf('## A tour'))
  const block = tour.slice(tour.indexOf('```sh\n') + 6, tour.indexOf('\n```', tour.indexOf('```sh\n')))
  return block.split(/^# Terminal \d+:.*$/m).slice(1).map((part) => part.trim())
}

/** The tour's "look around" block: the lines from the receiver started again to the resend's `wait`. */
function resendLines(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const around = readme.slice(readme.indexOf('Then look around'))
  const block = around.slice(around.indexOf('```sh\n') + 6, around.indexOf('\n```', around.indexOf('```sh\n'))).split('\n')
  const from = block.findIndex((l) => l.includes('hookledger listen'))
  const to = block.findIndex((l) => l.includes('/redeliver'))
  expect(from, 'a receiver is started again before the resend').toBeGreaterThanOrEqual(0)
  expect(to).toBeGreaterThan(from)
  return block.slice(from, to + 1).join('\n')
}

/** Runs a terminal's commands in bash, in its own process group; `output()` is all it printed. */
function terminal(script: string, env: NodeJS.ProcessEnv) {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  running.push(child)
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exit = new Promise<number | null>((r) => child.on('close', r))
  return { output: () => out, exit }
}

describe('the README tour', () => {
  it('run as written, ends with a signature-verified arrival at `hookledger listen`', async () => {
    const [service, commands] = tourTerminals()
    expect(service).toContain('npm start')
    expect(commands).toContain('hookledger listen')
    const [apiPort, listenPort] = [await freePort(), await freePort()]
    const ports = (s: string) => s.replaceAll('8787', String(apiPort)).replaceAll('9000', String(listenPort))
    const env = { HOOKLEDGER_DATA_DIR: dataDir, PORT: String(apiPort), DATABASE_URL: '' }

    const serve = terminal(ports(service!), env)
    await eventually('the service to listen', () => serve.output().includes('hookledger listening on'), { timeoutMs: 90_000 })
    const second = terminal(ports(commands!), env)
    expect(await second.exit, second.output()).toBe(0)
    expect(second.output()).toMatch(/"secret":"whsec_/)
    expect(second.output()).toMatch(/evt_\w+ booking\.created booking:\/\/42 — signature verified \(endpoint [0-9a-f-]+\)/)

    // "Resend one", as the tour's look-around block says it: it arrives, and the tour ends with
    // every endpoint healthy (the resend once went to a receiver that had exited: failing for days).
    const admin = await hookledgerOut(['token', 'create', '--owner', 'default', '--scopes', 'admin', '--quiet'], env)
    const lookup = new pg.Client({ connectionString: await hookledgerOut(['database-url', '--role', 'reader'], env) })
    await lookup.connect()
    try {
      const deliveryId = (await lookup.query('select id from hookledger.deliveries limit 1')).rows[0].id as string
      const resend = terminal(ports(resendLines()).replaceAll('<delivery id>', deliveryId), { ...env, H: `authorization: Bearer ${admin}`, URL: `http://127.0.0.1:${apiPort}` })
      expect(await resend.exit, resend.output()).toBe(0)
      expect(resend.output()).toMatch(/signature verified/)
      await eventually('the resend to be recorded', async () => {
        const d = (await lookup.query('select state, run from hookledger.deliveries where id = $1', [deliveryId])).rows[0]
        return d.state === 'completed' && d.run === 2
      })
      expect((await lookup.query('select failing_since from hookledger.endpoints')).rows).toEqual([{ failing_since: null }])
    } finally {
      await lookup.end()
    }

    // The service really runs as the least-privileged role, never as the cluster's superuser.
    const reader = new pg.Client({ connectionString: await hookledgerOut(['database-url', '--role', 'reader'], env) })
    await reader.connect()
    try {
      expect((await reader.query('select current_user as me')).rows[0].me).toBe('hookledger_reader')
      const sessions = await reader.query(`select distinct usename::text as name from pg_stat_activity where datname = 'hookledger' and usename is not null and pid <> pg_backend_pid()`)
      expect(sessions.rows.map((r: { name: string }) => r.name)).toEqual(['hookledger_service'])
    } finally {
      await reader.end()
    }
    const asService = new pg.Client({ connectionString: await hookledgerOut(['database-url', '--role', 'service'], env) })
    await asService.connect()
    try {
      expect((await asService.query('select current_user as me')).rows[0].me).toBe('hookledger_service')
      await expect(asService.query('delete from hookledger.ledger')).rejects.toThrow(/permission denied/)
    } finally {
      await asService.end()
    }
  }, 150_000)
})
