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
 * from the build, as plain JavaScript.
 */
export function startSealerThread(options: { url: string; schema: string; key: LedgerSigningKey }): SealerThread {
  const data: SealerThreadData = { url: options.url, schema: options.schema, key: options.key }
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(`./sealer-thread-entry.${fromSource ? 'ts' : 'js'}`, import.meta.url)
  const worker = fromSource
    ? new Worker(
        `import(${JSON.stringify(tsxEsmApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}) })`,
        { eval: true, workerData: data, execArgv: ['--conditions=source'] },
      )
    : new Worker(entry, { workerData: data })
  worker.unref()
  const pending = new Map<number, Pending>()
  let next = 0
  let ended: Error | null = null
  const failAll = (err: Error) => {
    ended = err
    for (const p of pending.values()) p.reject(err)
    pending.clear()
  }
  worker.on('message', (reply: SealReply) => {
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
  worker.on('error', (err) => failAll(err))
  worker.on('exit', (code) => failAll(new Error(`the sealer thread ended (exit code ${code})`)))

  return {
    seal: (params) => {
      if (ended) return Promise.reject(ended)
      const id = ++next
      return new Promise<SealResult>((resolve, reject) => {
        pending.set(id, { checkpoints: [], onCheckpoint: params.onCheckpoint, resolve, reject })
        // While a seal is in flight the thread keeps the process's event loop busy on purpose.
        if (pending.size === 1) worker.ref()
        const request: SealRequest = { id, now: params.now.toISOString(), ...(params.force ? { force: true } : {}) }
        worker.postMessage(request)
      }).finally(() => {
        if (pending.size === 0) worker.unref()
      })
    },
    close: async () => {
      if (ended) return
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
      worker.ref()
      worker.postMessage('close')
      await exited
    },
  }
}
