import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import {
  OpError,
  OPERATIONS,
  parseOpInput,
  type OpContext,
  type OpDeps,
  type Operation,
} from '@hookledger/ops'
import { OPERATOR_OWNER, type TokenScope } from '@hookledger/store'

// The database refusing a value's format is bad input, as on the HTTP route: invalid text
// representation, datetime format/overflow, untranslatable character, bad escape.
const PG_BAD_INPUT = new Set(['22P02', '22007', '22008', '22021', '22P05', '22025', '22003'])

/** MCP tool names allow letters, digits, `_` and `-`: `webhooks.create` → `webhooks_create`. */
export const toolName = (op: Operation): string => op.name.replaceAll('.', '_')

type ObjectSchema = Tool['inputSchema']

/** zod → JSON Schema, without `$schema` (clients compile it with their own draft). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): ObjectSchema | undefined {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >
  return rest.type === 'object' ? (rest as ObjectSchema) : undefined
}

/** The MCP tool for `op`: its name, summary + route, and its zod schemas as JSON Schema. */
export function toolOf(op: Operation): Tool {
  const { method, path } = op.http
  const outputSchema = jsonSchemaOf(op.output, 'output')
  return {
    name: toolName(op),
    title: op.name,
    description: `${op.summary} (${method} ${path}, scope ${op.scope})`,
    // Every op input is a (strict) object; an empty one still needs `type: object`.
    inputSchema: jsonSchemaOf(op.input, 'input') ?? { type: 'object' },
    ...(outputSchema ? { outputSchema } : {}),
    annotations: {
      readOnlyHint: method === 'GET',
      destructiveHint: method === 'DELETE',
      idempotentHint: method === 'GET' || method === 'PUT' || method === 'DELETE',
      openWorldHint: false,
    },
  }
}

/** A refusal as a tool result: the model reads it and can correct the call. */
function problemResult(problem: { code: string; message: string; field?: string | undefined }): CallToolResult {
  const { code, message, field } = problem
  const text = JSON.stringify({ code, message, ...(field ? { field } : {}) })
  return { isError: true, content: [{ type: 'text', text }] }
}

export interface McpServerOptions {
  readonly deps: OpDeps
  /** The owner every call acts for; ignored (no owner) when `scopes` holds `operator`. */
  readonly owner_id: string
  /** Which operations become tools: those whose scope is listed. */
  readonly scopes: readonly TokenScope[]
  /** Reported to the client in `initialize`. */
  readonly version?: string
}

/**
 * The MCP projection of the operation registry: one tool per operation the scopes allow, each
 * call validated by `parseOpInput` and run by the op's handler exactly as the HTTP route and
 * `hookledger op` run it. An `OpError` (or bad input the database refuses) answers a tool result
 * with `isError` and the problem; an unexpected fault answers `internal_error` and is logged.
 * A pure adapter: the caller connects a transport (stdio in `hookledger mcp`).
 */
export function createMcpServer(options: McpServerOptions): Server {
  const { deps, scopes } = options
  const operator = scopes.includes('operator')
  const ctx: Omit<OpContext, 'deps'> = {
    principal: {
      id: 'mcp',
      owner_id: operator ? OPERATOR_OWNER : options.owner_id,
      scopes: [...scopes],
    },
    actor: operator ? 'operator' : 'owner:mcp',
  }
  const allowed = OPERATIONS.filter((op) => scopes.includes(op.scope))
  const tools = new Map(allowed.map((op) => [toolName(op), { op, tool: toolOf(op) }]))
  const log = deps.logger

  // The low-level Server (not McpServer) takes JSON Schemas as they are; the ops' zod schemas
  // are converted once above, the same way the OpenAPI description converts them.
  const server = new Server(
    { name: 'hookledger', version: options.version ?? '0.1.0' },
    {
      capabilities: { tools: {} },
      instructions: operator
        ? 'hookledger operator tools: read, audit and replay the ledger across all owners.'
        : `hookledger webhook operations for owner "${ctx.principal.owner_id}" ` +
          `(scopes ${scopes.join(', ')}). An endpoint secret is shown once, in the answer ` +
          'of webhooks_create or webhooks_rotate_secret.',
    },
  )

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...tools.values()].map((t) => t.tool),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const entry = tools.get(request.params.name)
    if (!entry) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${request.params.name}"`)
    const { op } = entry
    try {
      const input = parseOpInput(op, request.params.arguments ?? {})
      const reply = await op.handler({ deps, ...ctx }, input)
      // As on the wire: dates become ISO strings, undefined fields disappear.
      const body = JSON.parse(JSON.stringify(reply.body ?? {})) as Record<string, unknown>
      log.debug({ op: op.name, status: reply.status }, 'mcp:call')
      return {
        structuredContent: body,
        content: [{ type: 'text', text: JSON.stringify(body, null, 2) }],
      }
    } catch (err) {
      if (err instanceof OpError) {
        log.debug({ op: op.name, code: err.code }, 'mcp:call')
        return problemResult(err)
      }
      const pgCode = (err as { code?: unknown }).code
      if (typeof pgCode === 'string' && PG_BAD_INPUT.has(pgCode)) {
        return problemResult({
          code: 'invalid_input',
          message: 'a value has the wrong format',
        })
      }
      log.error({ err, op: op.name }, 'mcp:unhandled_error')
      return problemResult({
        code: 'internal_error',
        message: 'something went wrong on our side',
      })
    }
  })

  return server
}
