import { sql } from 'kysely'
import type { Db, Trx } from '@hookledger/store'
import { addNoteSignatures, openNote, policySatisfied, policyVerifiers, verifiedPolicyWitnesses, type TlogPolicy } from '../log/index.js'
import type { TreeNote } from '../proof/ledger-tree-note.js'
import { latestTreeNote } from './ledger-tree.js'

/** Keeps a witness's cosignature line of the tree of `treeSize` rows (verified by the caller). */
export async function ledgerCosignatureAdd(db: Db, params: { treeSize: number; witness: string; line: string; at: Date }): Promise<void> {
  const p = { tree_size: params.treeSize, witness: params.witness, line: params.line, cosigned_at: params.at.toISOString() }
  await sql`select hookledger_cosignature_add(${JSON.stringify(p)}::jsonb)`.execute(db)
}

/** The cosignature lines kept for the tree of `size` rows, by witness name. */
export async function cosignaturesOf(db: Db | Trx, size: number): Promise<{ witness: string; line: string }[]> {
  return (
    await sql<{ witness: string; line: string }>`
      select witness, line from ledger_cosignatures where tree_size = ${size}::bigint order by witness
    `.execute(db)
  ).rows
}

/** A note with its witnesses' cosignatures after the log's own signature. */
export interface ServedCheckpoint extends TreeNote {
  /** Policy names of the witnesses that cosigned it. */
  readonly witnesses: readonly string[]
  /** Whether they meet the policy's quorum (true without a policy). */
  readonly quorum: boolean
}

/** Newest checkpoints looked back through for one that has its quorum. */
const QUORUM_LOOKBACK = 64

/**
 * The checkpoint the log serves (`/log/checkpoint`, receipts): without a policy, the newest
 * note with whatever cosignatures it has; with one, the newest note whose cosignatures meet its
 * quorum (so a verifier holding the policy accepts it), else the newest, marked `quorum: false`.
 */
export async function servedCheckpoint(db: Db | Trx, policy: TlogPolicy | null): Promise<ServedCheckpoint | null> {
  const newest = await latestTreeNote(db)
  if (!newest) return null
  const candidates = policy === null || policy.quorum === 'none'
    ? [newest]
    : (
        await sql<{ seq: string; total: string; tree_note: string }>`
          select distinct on (c.total) c.seq::text as seq, c.total::text as total, c.tree_note from ledger_checkpoints c
          where c.tree_note is not null and c.total in (select tree_size from ledger_cosignatures)
          order by c.total desc, c.seq desc limit ${QUORUM_LOOKBACK}
        `.execute(db)
      ).rows.map((r) => ({ seq: Number(r.seq), size: Number(r.total), note: r.tree_note }))
  for (const candidate of candidates) {
    const lines = await cosignaturesOf(db, candidate.size)
    const note = lines.length > 0 ? addNoteSignatures(candidate.note, lines.map((l) => l.line)) : candidate.note
    if (policy === null) return { ...candidate, note, witnesses: lines.map((l) => l.witness), quorum: true }
    const witnesses = witnessesOf(policy, note)
    if (policySatisfied(policy, witnesses)) return { ...candidate, note, witnesses: [...witnesses], quorum: true }
  }
  const lines = await cosignaturesOf(db, newest.size)
  return { ...newest, note: lines.length > 0 ? addNoteSignatures(newest.note, lines.map((l) => l.line)) : newest.note, witnesses: lines.map((l) => l.witness), quorum: false }
}

/** The policy's witnesses whose cosignatures on `note` verify (the log's own signature is not checked here). */
function witnessesOf(policy: TlogPolicy, note: string): Set<string> {
  try {
    return verifiedPolicyWitnesses(policy, openNote(note, policyVerifiers(policy).witnesses, { requireVerified: false, rejectBadSignatures: false }).signatures)
  } catch {
    return new Set()
  }
}
