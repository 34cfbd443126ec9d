/**
 * The one growing RFC 6962 tree served as C2SP tlog-tiles, pure: tile paths, the right edge a
 * log appends to, reading subtree hashes out of tiles, and roots and proofs from tiles alone.
 */
export * from './tile-path.js'
export * from './tree-edge.js'
export * from './tile-hash-reader.js'
export * from './tree-proofs.js'
