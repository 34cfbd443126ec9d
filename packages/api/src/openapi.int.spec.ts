import { Validator } from '@seriousme/openapi-schema-validator'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPERATIONS } from '@hookledger/ops'
import { testDatabase, type TestDatabase, testApi, type TestApi } from '@hookledger/testkit'

let database: TestDatabase
let api: TestApi
beforeAll(async () => {
  database = await testDatabase()
  api = testApi(database.db)
})
afterAll(() => database.close())

type Doc = {
  openapi: string
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string
        'x-scope': string
        parameters?: { name: string; in: string }[]
        requestBody?: unknown
      }
    >
  >
}

describe('GET /api/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (checked by @seriousme/openapi-schema-validator)', async () => {
    const res = await api.call('GET', '/api/openapi.json')
    expect(res.status).toBe(200)
    const validator = new Validator()
    const result = await validator.validate(res.body)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
  })

  it('lists every operation once, at its route, with its scope and path parameters', async () => {
    const doc = (await api.call('GET', '/api/openapi.json')).body as Doc
    const listed = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ path, method, op })),
    )
    expect(listed.map((l) => l.op.operationId).sort()).toEqual(OPERATIONS.map((o) => o.name).sort())
    for (const op of OPERATIONS) {
      const path = op.http.path.replace(/:([a-z_]+)/g, '{$1}')
      const entry = doc.paths[path]?.[op.http.method.toLowerCase()]
      expect(entry, op.name).toBeDefined()
      expect(entry!.operationId).toBe(op.name)
      expect(entry!['x-scope']).toBe(op.scope)
      for (const [, name] of op.http.path.matchAll(/:([a-z_]+)/g)) {
        expect(entry!.parameters, `${op.name} declares {${name}}`).toContainEqual(
          expect.objectContaining({ name, in: 'path', required: true }),
        )
      }
    }
    // Bodies are described for the ops that take one.
    expect(doc.paths['/api/admin/webhooks']!['post']!.requestBody).toBeDefined()
    expect(doc.paths['/api/events']!['post']!.requestBody).toBeDefined()
    expect(doc.paths['/api/admin/webhooks/{id}']!['patch']!.requestBody).toBeDefined()
  })
})
