/**
 * Sealing on a thread of its own: the rows' encoding, their hashes and the tree's growth run
 * beside the delivery loop instead of between its callbacks (on the 2-core bench machine they
 * were ~10 µs a row on the delivering thread). The thread has its own connection; the clock
 * stays here: each request carries `now`.
 */
import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { LedgerCheckpoint, LedgerSigningKey, SealResult } from '@hookledger/ledger'
import { errorOf, type SealerThreadData, type SealReply, type SealRequest } from './sealer-thread-messages.js'

/** One seal as the sealer loop asks for it (ledgerSeal's parameters without the database and key). */
export type SealFunction = (params: { now: Date; force?: boolean; onCheckpoint?: (checkpoint: LedgerCheckpoint) => void }) => Promise<SealResult>

export interface SealerThread {
  readonly seal: SealFunction
  /** Ends the thread after the seal in flight; later seals are refused. */
  close(): Promise<void>
  /** Ends the thread at once (the seal in flight fails); the next seal starts a new one. */
  terminate(): Promise<void>
}

interface Pending {
  readonly checkpoints: LedgerCheckpoint[]
  readonly onCheckpoint: ((checkpoint: LedgerCheckpoint) => void) | undefined
  resolve(result: SealResult): void
  reject(err: Error): void
}

/** tsx's ESM loader API as a file URL (its CommonJS build cannot register the ESM hooks). */
function tsxEsmApi(): string {
  const require = createRequire(import.meta.url)
  const manifest = require.resolve('tsx/package.json')
  const exports = (require(manifest) as { exports: Record<string, { import: { default: string } }> }).exports
  return pathToFileURL(path.join(path.dirname(manifest), exports['./esm/api']!.import.default)).href
}

/**
 * Starts the thread. From the TypeScript sources (tests, `tsx`) it runs through tsx's loader;
 * from the build, as plain JavaScript. A thread that ends unasked (a crash, `terminate`) fails
 * the seal in flight, and the next seal starts a new one: sealing never stops for good.
 */
export function startSealerThread(options: { url: string; schema: string; key: LedgerSigningKey }): SealerThread {
  const data: SealerThreadData = { url: options.url, schema: options.schema, key: options.key }
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(`./sealer-thread-entry.${fromSource ? 'ts' : 'js'}`, import.meta.url)
  const pending = new Map<number, Pending>()
  let next = 0
  let closed = false
  let worker: Worker | null = null

  const spawn = (): Worker => {
    const w = fromSource
      ? new Worker(
          `import(${JSON.stringify(tsxEsmApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}) })`,
          { eval: true, workerData: data, execArgv: ['--conditions=source'] },
        )
      : new Worker(entry, { workerData: data })
    w.unref()
    w.on('message', (reply: SealReply) => {
      const p = pending.get(reply.id)
      if (!p) return
      if ('checkpoint' in reply) {
        p.checkpoints.push(reply.checkpoint)
        p.onCheckpoint?.(reply.checkpoint)
      } else {
        pending.delete(reply.id)
        if ('error' in reply) p.reject(errorOf(reply.error))
        else p.resolve({ checkpoints: p.checkpoints, rows: reply.done.rows })
      }
    })
    const ended = (err: Error) => {
      if (worker === w) worker = null
      for (const p of pending.values()) p.reject(err)
      pending.clear()
    }
    w.on('error', ended)
    w.on('exit', (code) => ended(new Error(`the sealer thread ended (exit code ${code})`)))
    return w
  }

  return {
    seal: (params) => {
      if (closed) return Promise.reject(new Error('the sealer thread ended (closed)'))
      const w = (worker ??= spawn())
      const id = ++next
      return new Promise<SealResult>((resolve, reject) => {
        pending.set(id, { checkpoints: [], onCheckpoint: params.onCheckpoint, resolve, reject })
        // While a seal is in flight the thread keeps the process's event loop busy on purpose.
        if (pending.size === 1) w.ref()
        const request: SealRequest = { id, now: params.now.toISOString(), ...(params.force ? { force: true } : {}) }
        w.postMessage(request)
      }).finally(() => {
        if (pending.size === 0) w.unref()
      })
    },
    terminate: async () => {
      await worker?.terminate()
    },
    close: async () => {
      closed = true
      const w = worker
      if (!w) return
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()))
      w.ref()
      w.postMessage('close')
      await exited
    },
  }
}
