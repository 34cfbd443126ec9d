/**
 * The C2SP transparency-log text formats, pure (no I/O): signed notes and their keys,
 * checkpoints, cosignatures, offline proofs, and trust policies.
 */
export * from './note-keys.js'
export * from './signed-note.js'
export * from './tlog-checkpoint.js'
export * from './tlog-cosignature.js'
export * from './tlog-proof.js'
export * from './tlog-policy.js'
export * from './tlog-witness-request.js'
