import { parseArgs } from 'node:util'
import { createMcpServer, parseMcpPrincipal, StdioServerTransport } from '@hookledger/mcp'
import type { Config } from './config.js'
import { processIo as io } from './cli-io.js'
import { createLogger, createOpDeps, openDatabase } from './service.js'

/**
 * `mcp --owner O [--scopes admin,publish|operator]`: serves the operations as MCP tools over
 * stdin/stdout until stdin closes (or SIGTERM/SIGINT), then closes the database.
 */
export async function mcpCommand(config: Config, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { owner: { type: 'string' }, scopes: { type: 'string' } },
  })
  const parsed = parseMcpPrincipal(values)
  if (!parsed.ok) {
    io.err(parsed.message)
    return 2
  }
  // stdout carries the protocol alone: every log line goes to stderr.
  const level = config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL
  const log = createLogger({ LOG_LEVEL: level }, process.stderr)
  const database = await openDatabase(config, log, 2)
  try {
    // The operator tools that sign load the key when called, checked against the ledger.
    const deps = createOpDeps(config, database.db, log, database.clock, { signingKey: { kind: 'on-demand' } })
    const server = createMcpServer({ deps, ...parsed.principal })
    const done = new Promise<void>((resolve) => {
      process.stdin.once('end', resolve)
      process.stdin.once('close', resolve)
      process.once('SIGTERM', resolve)
      process.once('SIGINT', resolve)
    })
    await server.connect(new StdioServerTransport())
    await done
    await server.close()
    return 0
  } finally {
    await database.close()
  }
}
