import { z } from 'zod'
import {
  parseGivenLedgerKey,
  ledgerVerifierKey,
  logOriginStored,
  archivedThrough,
  latestSignedSnapshot,
  ledgerExport,
  ledgerReceipt,
  ledgerSeal,
  ledgerSealState,
  ledgerSnapshotTake,
  ledgerVerify,
  SnapshotError,
  type LedgerExportLine,
} from '@hookledger/ledger'
import { invalidInput } from './op-input.js'
import { requirePublicKey, requireSigningKey } from './ledger-keys.js'
import { notFound, OpError } from './op-error.js'
import { ledgerEntrySchema } from './operator-ops.js'
import { defineOp, ok } from './operation.js'
import { uuidParam } from './schemas.js'

/** A ledger position as text (digits). */
const positionText = z.string().regex(/^\d{1,19}$/, 'must be a ledger position')

const chainRef = z.object({ tx_id: z.string(), position: z.string() }).nullable()

/** A projection snapshot as a checkpoint signs it. */
const snapshotSchema = z.object({
  seq: z.number().int(),
  before_position: z.string(),
  horizon: z.string(),
  digest: z.string(),
  endpoints: z.number().int(),
  deliveries: z.number().int(),
})

/** A signed checkpoint, exactly as signed (verify it with the public key). */
export const checkpointSchema = z.object({
  seq: z.number().int(),
  first: chainRef,
  last: chainRef,
  count: z.number().int(),
  total: z.number().int(),
  chain_hash: z.string(),
  merkle_root: z.string(),
  prev_checkpoint_hash: z.string(),
  created_at: z.string(),
  key_id: z.string(),
  signature: z.string(),
  snapshot: snapshotSchema.nullable().optional(),
})

/** A ledger row as the chain hashes it: the feed's entry plus its tx_id, payload as stored. */
const chainRowSchema = ledgerEntrySchema.extend({ tx_id: z.string(), payload: z.unknown() })

export const ledgerCheckpointOp = defineOp({
  name: 'ledger.checkpoint',
  summary: 'Seal the ledger now: extend the hash chain and sign a checkpoint (one even if nothing is new)',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/ledger/checkpoints' },
  input: z.strictObject({}),
  output: z.object({ rows: z.number().int(), data: z.array(checkpointSchema) }),
  async handler(ctx) {
    const key = await requireSigningKey(ctx.deps.ledgerKeys)
    const sealed = await ledgerSeal(ctx.deps.db, { key, now: ctx.deps.clock.now(), force: true })
    return { status: 201, body: { rows: sealed.rows, data: sealed.checkpoints } }
  },
})

export const ledgerPublicKeyOp = defineOp({
  name: 'ledger.public_key',
  summary: 'The Ed25519 public key that signs checkpoints, how far the ledger is sealed, the latest signed snapshot and how far history is archived',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/ledger/public_key' },
  input: z.strictObject({}),
  output: z.object({
    public_key: z.string(),
    key_id: z.string(),
    /** The log's origin and verifier key (`<origin>+<key id>+<key>`, what C2SP note verifiers take). */
    origin: z.string().nullable(),
    vkey: z.string().nullable(),
    checkpoints: z.number().int(),
    sealed_position: z.string().nullable(),
    latest_position: z.string().nullable(),
    /** Replay and ledger.verify start here. */
    snapshot: z.object({ seq: z.number().int(), before_position: z.string(), checkpoint: z.number().int() }).nullable(),
    /** Checkpoints up to this one had rows archived and dropped (null: none). */
    archived_through: z.number().int().nullable(),
  }),
  async handler(ctx) {
    // The key the latest checkpoint names: a process that holds no secret key knows it too.
    const key = await requirePublicKey(ctx.deps.ledgerKeys)
    const state = await ledgerSealState(ctx.deps.db)
    const snapshot = await latestSignedSnapshot(ctx.deps.db)
    const archived = await archivedThrough(ctx.deps.db)
    const origin = await logOriginStored(ctx.deps.db)
    return ok({
      origin,
      vkey: origin !== null ? ledgerVerifierKey(origin, key.publicKey) : null,
      snapshot: snapshot && { seq: snapshot.descriptor.seq, before_position: snapshot.descriptor.before_position, checkpoint: snapshot.checkpointSeq },
      archived_through: archived?.throughCheckpoint ?? null,
      public_key: key.publicKey,
      key_id: key.keyId,
      checkpoints: state.checkpoints,
      sealed_position: state.sealedPosition,
      latest_position: state.latestPosition,
    })
  },
})

export const ledgerVerifyOp = defineOp({
  name: 'ledger.verify',
  summary:
    'Recompute the hash chain and every checkpoint over the database, check the signatures, and (unless chain_only) replay the projections — from the latest signed snapshot, or every row left with full',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/ledger/verify' },
  input: z.strictObject({ chain_only: z.boolean().default(false), full: z.boolean().default(false), public_key: z.string().optional() }),
  output: z.object({
    ok: z.boolean(),
    rows: z.number().int(),
    sealed_rows: z.number().int(),
    unsealed_rows: z.number().int(),
    checkpoints: z.number().int(),
    first_bad_position: z.string().nullable(),
    problems: z.array(z.object({ kind: z.string(), position: z.string().nullable(), checkpoint: z.number().nullable(), detail: z.string() })),
    problems_omitted: z.number().int(),
    replay_differences: z.number().int().nullable(),
    /** The checkpoint the rows were read after (null: from the first row), and why. */
    started_after_checkpoint: z.number().int().nullable(),
    start_reason: z.enum(['genesis', 'archive', 'snapshot']),
    /** The snapshot the replay started from, and whether its rows hash to the signed digest. */
    snapshot: z.object({ seq: z.number().int(), checkpoint: z.number().int(), before_position: z.string(), digest_matches: z.boolean() }).nullable(),
    /** The log's tree: notes, tiles and rows agree, and earlier checkpoints are prefixes of the newest. */
    tree: z.object({
      ok: z.boolean(),
      origin: z.string().nullable(),
      size: z.number().int(),
      leaves_checked: z.number().int(),
      checkpoints_proven: z.number().int(),
      problems: z.array(z.object({ kind: z.string(), size: z.number().int().nullable(), detail: z.string() })),
    }),
    ms: z.number(),
  }),
  async handler(ctx, input) {
    let publicKey: Uint8Array
    try {
      publicKey = parseGivenLedgerKey(input.public_key ?? (await requirePublicKey(ctx.deps.ledgerKeys)).publicKey).publicKey
    } catch (err) {
      if (err instanceof OpError) throw err
      throw invalidInput('public_key', `public_key must be the ledger's hlpk_… key or the log's vkey (<origin>+<key id>+<key>): ${(err as Error).message}`)
    }
    const verdict = await ledgerVerify(ctx.deps.db, { publicKey, handOvers: ctx.deps.ledgerKeys.handOvers(), full: input.full, chainOnly: input.chain_only })
    const { chain, tree, replay } = verdict
    const replayDifferences = replay ? replay.differencesTotal : null
    const snapshot = replay?.snapshot ?? null
    return ok({
      ok: verdict.ok,
      rows: chain.rows,
      sealed_rows: chain.sealedRows,
      unsealed_rows: chain.unsealedRows,
      checkpoints: chain.checkpoints,
      first_bad_position: chain.firstBadPosition,
      problems: chain.problems,
      problems_omitted: chain.problemsOmitted,
      replay_differences: replayDifferences,
      started_after_checkpoint: chain.start.afterCheckpoint,
      start_reason: chain.start.reason,
      snapshot: snapshot && { seq: snapshot.seq, checkpoint: snapshot.checkpoint, before_position: snapshot.beforePosition, digest_matches: snapshot.digestMatches },
      tree: { ok: tree.ok, origin: tree.origin, size: tree.size, leaves_checked: tree.leavesChecked, checkpoints_proven: tree.checkpointsProven, problems: [...tree.problems] },
      ms: chain.ms + (replay?.ms ?? 0),
    })
  },
})

export const ledgerSnapshotOp = defineOp({
  name: 'ledger.snapshot',
  summary:
    'Fold the projections up to now into a snapshot a checkpoint signs (after verifying the chain); replay and ledger.verify start from the latest one',
  scope: 'operator',
  http: { method: 'POST', path: '/api/operator/ledger/snapshots' },
  input: z.strictObject({}),
  output: z.object({ snapshot: snapshotSchema, checkpoint: z.number().int(), fresh: z.boolean(), entries_folded: z.number().int(), ms: z.number() }),
  async handler(ctx) {
    try {
      const key = await requireSigningKey(ctx.deps.ledgerKeys)
      const taken = await ledgerSnapshotTake(ctx.deps.db, { key, handOvers: ctx.deps.ledgerKeys.handOvers(), now: () => ctx.deps.clock.now() })
      const body = { snapshot: taken.snapshot, checkpoint: taken.checkpoint, fresh: taken.fresh, entries_folded: taken.entriesFolded, ms: taken.ms }
      return taken.fresh ? { status: 201, body } : ok(body)
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err
      throw new OpError(err.code === 'snapshot_unsigned' ? 'snapshot_unsigned' : 'ledger_not_verified', err.message)
    }
  },
})

export const webhooksReceipt = defineOp({
  name: 'webhooks.receipt',
  summary:
    "A delivery's ledger entries, each sealed one as a C2SP tlog-proof (its canonical row bytes in `extra`) into the log's signed checkpoint: verifiable offline with the log's vkey by any tlog-proof verifier",
  scope: 'admin',
  http: { method: 'GET', path: '/api/admin/deliveries/:id/receipt' },
  input: z.strictObject({ id: uuidParam }),
  output: z.object({
    format: z.literal('hookledger.receipt.v2'),
    delivery_id: z.string(),
    origin: z.string().nullable(),
    /** The log's verifier key (`<origin>+<key id>+<key>`), null before the first checkpoint. */
    vkey: z.string().nullable(),
    public_key: z.string(),
    tree_size: z.number().int(),
    entries: z.array(z.object({ row: chainRowSchema, leaf_index: z.number().int(), tlog_proof: z.string() })),
    unsealed: z.array(chainRowSchema),
    unprovable: z.array(chainRowSchema),
  }),
  async handler(ctx, input) {
    const receipt = await ledgerReceipt(ctx.deps.db, { owner_id: ctx.principal.owner_id, delivery_id: input.id, policy: ctx.deps.logPolicy ?? null })
    if (!receipt) throw notFound('delivery')
    const key = await requirePublicKey(ctx.deps.ledgerKeys)
    return ok({
      ...receipt,
      vkey: receipt.origin !== null ? ledgerVerifierKey(receipt.origin, key.publicKey) : null,
      public_key: key.publicKey,
      entries: [...receipt.entries],
      unsealed: [...receipt.unsealed],
      unprovable: [...receipt.unprovable],
    })
  },
})

/** Rows one `ledger.export` answer may hold; larger ranges are for `npx hookledger ledger export`. */
const EXPORT_MAX_ROWS = 50_000

export const ledgerExportOp = defineOp({
  name: 'ledger.export',
  summary:
    'Sealed history as export lines (header, anchor, checkpoints with their leaves, rows): verifiable offline with the public key',
  scope: 'operator',
  http: { method: 'GET', path: '/api/operator/ledger/export' },
  input: z.strictObject({ from: positionText.optional(), to: positionText.optional() }),
  output: z.object({ data: z.array(z.record(z.string(), z.unknown())) }),
  async handler(ctx, input) {
    const lines: LedgerExportLine[] = []
    let rows = 0
    await ledgerExport(ctx.deps.db, {
      from: input.from,
      to: input.to,
      onLine: (line) => {
        if (line.type === 'row' && ++rows > EXPORT_MAX_ROWS) {
          throw invalidInput('to', `the range holds more than ${EXPORT_MAX_ROWS} rows: narrow from/to, or use \`npx hookledger ledger export\``)
        }
        lines.push(line)
      },
    })
    return ok({ data: lines as unknown as Record<string, unknown>[] })
  },
})
