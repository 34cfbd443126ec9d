/**
 * The embedded PostgreSQL a fresh install runs on: the packaged binaries, the unprivileged
 * account a root process runs the cluster as, and the cluster's process. Used by the
 * composition root (`server`) and the test and bench setup (`testkit`), never on the hot path.
 */
export * from './embedded-database.js'
export { SHARED_ROOT as EMBEDDED_SHARED_ROOT } from './embedded-cluster-account.js'
export * from './embedded-standby.js'
export { createFileOnce } from './file-once.js'
