import { z } from 'zod'
import type { Operation } from '@hookledger/ops'

const PROBLEM = {
  type: 'object',
  required: ['type', 'title', 'status', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    code: { type: 'string' },
    detail: { type: 'string' },
    field: { type: 'string' },
  },
}

/** zod → JSON Schema (draft 2020-12, which OpenAPI 3.1 uses). */
const schemaOf = (s: z.ZodType, io: 'input' | 'output') => {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>
  return rest
}

/**
 * The OpenAPI 3.1 description, generated from the same operation declarations (and zod
 * schemas) the routes are built from, so the two cannot drift.
 */
export function buildOpenApi(operations: readonly Operation[]) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const op of operations) {
    const path = op.http.path.replace(/:([a-z_]+)/g, '{$1}')
    const params = [...op.http.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!)
    const input = schemaOf(op.input, 'input') as { properties?: Record<string, unknown>; required?: string[] }
    const props = input.properties ?? {}
    const hasBody = op.http.method === 'POST' || op.http.method === 'PATCH'
    const parameters = Object.entries(props)
      .filter(([name]) => params.includes(name) || !hasBody)
      .map(([name, schema]) => ({
        name,
        in: params.includes(name) ? 'path' : 'query',
        required: params.includes(name) || (input.required ?? []).includes(name),
        schema,
      }))
    const bodySchema = hasBody
      ? {
          ...input,
          properties: Object.fromEntries(Object.entries(props).filter(([n]) => !params.includes(n))),
          required: (input.required ?? []).filter((n) => !params.includes(n)),
        }
      : null
    const statuses = op.statuses ?? [200]
    const responses: Record<string, unknown> = {}
    for (const s of statuses) {
      responses[String(s)] = { description: 'OK', content: { 'application/json': { schema: schemaOf(op.output, 'output') } } }
    }
    for (const s of ['400', '401', '403', '404', '422']) {
      responses[s] = { description: 'Problem', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } }
    }
    paths[path] ??= {}
    paths[path][op.http.method.toLowerCase()] = {
      operationId: op.name,
      summary: op.summary,
      security: [{ bearer: [] }],
      'x-scope': op.scope,
      ...(parameters.length ? { parameters } : {}),
      ...(bodySchema ? { requestBody: { required: true, content: { 'application/json': { schema: bodySchema } } } } : {}),
      responses,
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'hookledger', version: '0.1.0', description: 'Thin, signed, scoped webhooks with a replayable ledger.' },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Problem: PROBLEM },
    },
  }
}
