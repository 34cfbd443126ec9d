/**
 * The verifiable log: what a ledger row is as bytes, the Merkle tree and signed checkpoints over
 * them, receipts and exports a third party checks, key hand-overs (`proof/`, pure), and what
 * runs them against the database: sealing, snapshots, archives, the feed, replay and verify
 * (`database/`). The delivery engine (`store`) writes the ledger through its one door; this
 * package proves what was written.
 */
export * from './proof/ledger-row-encoding.js'
export * from './proof/ledger-row-about.js'
export * from './proof/merkle-tree.js'
export * from './proof/ledger-tree-note.js'
export * from './log/index.js'
export * from './tree/index.js'
export * from './tree/tile-appends.js'
export * from './proof/ledger-checkpoint.js'
export * from './proof/ledger-key-rotation.js'
export * from './proof/ledger-signing-key-decision.js'
export * from './proof/ledger-snapshot-digest.js'
export * from './proof/ledger-chain-verifier.js'
export * from './proof/ledger-receipt.js'
export * from './proof/ledger-export-verify.js'
export * from './database/ledger-replay.js'
export * from './database/ledger-read.js'
export * from './database/ledger-chain-rows.js'
export * from './database/ledger-seal.js'
export * from './database/ledger-tree.js'
export * from './database/ledger-chain-verify.js'
export * from './database/ledger-receipt-build.js'
export * from './database/ledger-export.js'
export * from './database/ledger-partitions.js'
export * from './database/ledger-snapshot.js'
export * from './database/ledger-snapshot-read.js'
export * from './database/ledger-archive.js'
export * from './database/ledger-file.js'
export * from './database/ledger-verify.js'
export * from './database/ledger-tree-verify.js'
export * from './database/ledger-cosignatures.js'
