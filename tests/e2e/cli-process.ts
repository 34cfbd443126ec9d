import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** Repository root (tests run from it). */
export const ROOT = new URL('../../', import.meta.url).pathname

/**
 * The installed `hookledger` command: the bin link npm made, which is what `npx hookledger`
 * runs. Spawned directly (npx itself costs ~0.3 s of CPU a start); `viaNpx` goes the README's
 * way, for the cases that prove it.
 */
export const HOOKLEDGER_BIN = new URL('node_modules/.bin/hookledger', new URL(ROOT, 'file://')).pathname
const command = (viaNpx: boolean | undefined, args: string[]): [string, string[]] =>
  viaNpx ? ['npx', ['hookledger', ...args]] : [HOOKLEDGER_BIN, args]

/**
 * The data dir of every process this test file starts without one of its own: shared by them
 * (as processes of one install share theirs, so their first start races to make its keys), and
 * never the repository's `.hookledger/`, which the tests would otherwise fill and depend on.
 */
let sharedDataDir: string | undefined
function withDataDir(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.HOOKLEDGER_DATA_DIR) return env
  if (!sharedDataDir) {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-e2e-data-'))
    sharedDataDir = dir
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  }
  return { ...env, HOOKLEDGER_DATA_DIR: sharedDataDir }
}

/** Runs `hookledger …` to completion; returns exit code and output. */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { viaNpx?: boolean } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(...command(options.viaNpx, args), { cwd: ROOT, env: { ...process.env, ...withDataDir(env) }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** A long-running `hookledger serve`, resolved once it prints its URL. */
export async function startServe(
  args: string[],
  env: NodeJS.ProcessEnv,
  /** Called with everything printed so far, on each chunk while starting. */
  onOutput?: (output: string) => void,
  options: { viaNpx?: boolean } = {},
): Promise<{ child: ChildProcess; url: string; pid: number; output: () => string; exit: Promise<number | null> }> {
  // Its own process group, so a serve that never comes up is killed whole (npx included).
  const child = spawn(...command(options.viaNpx, ['serve', ...args]), { cwd: ROOT, env: { ...process.env, ...withDataDir(env) }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let output = ''
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  // `npx` does not forward signals to the service, so tests signal the service's own pid (printed).
  const [url, pid] = await new Promise<[string, number]>((resolve, reject) => {
    // A serve that never comes up is killed, not left behind (it may be waiting for a database).
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {}
      reject(new Error(`serve did not start:\n${output}`))
    }, 60_000)
    const onData = (d: Buffer) => {
      output += d.toString()
      onOutput?.(output)
      const m =
        /hookledger listening on (http:\/\/\S+) \(pid (\d+)\)/.exec(output) ??
        /hookledger worker (started) \(pid (\d+)\)/.exec(output)
      if (m) {
        clearTimeout(t)
        resolve([m[1]!, Number(m[2])])
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    void exit.then(() => reject(new Error(`serve exited:\n${output}`)))
  })
  return { child, url, pid, output: () => output, exit }
}

/**
 * Runs a `hookledger` command in this process (the same `main` the binary runs, its output
 * captured): for the cases that need no process of their own. One real spawn per command
 * family stays in the suite.
 */
export async function runInProcess(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const { main } = await import('@hookledger/server')
  let stdout = ''
  let stderr = ''
  const code = await main(args, {
    env: { ...process.env, ...withDataDir(env) },
    io: { out: (line) => (stdout += line + '\n'), err: (line) => (stderr += line + '\n') },
  })
  return { code, stdout, stderr }
}
