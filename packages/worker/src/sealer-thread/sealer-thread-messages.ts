/**
 * What the sealer thread and the process that started it say to each other. Errors cross as
 * their name, message and code (a SQLSTATE or a system error's), which is what the loop's
 * outage tracking reads.
 */
import type { LedgerCheckpoint, LedgerSigningKey } from '@hookledger/ledger'

/** The thread's start: where to connect, and the key it signs with (a KeyObject crosses threads). */
export interface SealerThreadData {
  readonly url: string
  readonly schema: string
  readonly key: LedgerSigningKey
}

/** One seal, at the time the process's clock gave. */
export interface SealRequest {
  readonly id: number
  readonly now: string
  readonly force?: boolean
}

export interface SealErrorShape {
  readonly name: string
  readonly message: string
  readonly code?: string
}

export type SealReply =
  | { readonly id: number; readonly checkpoint: LedgerCheckpoint }
  | { readonly id: number; readonly done: { readonly rows: number } }
  | { readonly id: number; readonly error: SealErrorShape }

export function errorShape(err: unknown): SealErrorShape {
  const e = err instanceof Error ? err : new Error(String(err))
  const code = (e as { code?: unknown }).code
  return { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}) }
}

export function errorOf(shape: SealErrorShape): Error {
  const err = new Error(shape.message)
  err.name = shape.name
  if (shape.code !== undefined) Object.assign(err, { code: shape.code })
  return err
}
