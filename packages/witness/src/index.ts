/**
 * A C2SP transparency-log witness (c2sp.org/tlog-witness): it cosigns a log's checkpoint once
 * the checkpoint is signed by a log key it trusts and consistent with the last one it cosigned
 * for that log. The request parser and the decision are pure; the state file, the key file and
 * the HTTP app are the edges (the `hookledger witness` commands run them).
 */
export * from './add-checkpoint-request.js'
export * from './witness-decision.js'
export * from './witness-state-file.js'
export * from './witness-key-file.js'
export * from './witness-app.js'
