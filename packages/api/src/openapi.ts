import { z } from 'zod'
import { hasJsonBody, type Operation } from '@hookledger/ops'

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

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
}

/** zod → JSON Schema (draft 2020-12, which OpenAPI 3.1 uses). */
const schemaOf = (s: z.ZodType, io: 'input' | 'output') => {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >
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
    const input = schemaOf(op.input, 'input') as {
      properties?: Record<string, unknown>
      required?: string[]
    }
    const props = input.properties ?? {}
    const hasBody = hasJsonBody(op.http.method)
    const parameters = Object.entries(props)
      .filter(([name]) => params.includes(name) || !hasBody)
      .map(([name, schema]) => ({
        name,
        in: params.includes(name) ? 'path' : 'query',
        required: params.includes(name) || (input.required ?? []).includes(name),
        schema,
      }))
    const bodyProps = Object.keys(props).filter((n) => !params.includes(n))
    const bodySchema =
      hasBody && bodyProps.length > 0
        ? {
            ...input,
            properties: Object.fromEntries(
              Object.entries(props).filter(([n]) => !params.includes(n)),
            ),
            required: (input.required ?? []).filter((n) => !params.includes(n)),
          }
        : null
    const statuses = op.statuses ?? [200]
    const responses: Record<string, unknown> = {}
    for (const s of statuses) {
      responses[String(s)] = {
        description: STATUS_TEXT[s] ?? 'OK',
        content: { 'application/json': { schema: schemaOf(op.output, 'output') } },
      }
    }
    const problems = hasBody
      ? ['400', '401', '403', '404', '409', '413', '415', '422']
      : ['400', '401', '403', '404']
    for (const s of problems) {
      responses[s] = {
        description: 'Problem',
        content: {
          'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
        },
      }
    }
    paths[path] ??= {}
    paths[path][op.http.method.toLowerCase()] = {
      operationId: op.name,
      summary: op.summary,
      tags: [op.name.split('.')[0]!],
      security: [{ bearer: [] }],
      'x-scope': op.scope,
      ...(parameters.length ? { parameters } : {}),
      ...(bodySchema
        ? {
            requestBody: {
              required: bodySchema.required.length > 0,
              content: { 'application/json': { schema: bodySchema } },
            },
          }
        : {}),
      responses,
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'hookledger',
      version: '0.1.0',
      description: 'Thin, signed, scoped webhooks with a replayable ledger.',
    },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Problem: PROBLEM },
    },
  }
}
