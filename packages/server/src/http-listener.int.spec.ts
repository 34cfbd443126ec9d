import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasDotSegment, listenHttp, type HttpListener } from './http-listener.js'

/** Raw request targets, as a client that does not normalise them sends them. */
function rawGet(port: number, target: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: target, method: 'GET' }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('the HTTP listener refuses dot segments on the raw request target', () => {
  let listener: HttpListener
  beforeAll(async () => {
    listener = await listenHttp({ port: 0, host: '127.0.0.1' })
    listener.setHandler((req) => new Response(new URL(req.url).pathname))
  })
  afterAll(() => listener.close())

  it.each(['/api/admin/webhooks/%2e%2e/deliveries', '/api/admin/webhooks/%2E%2e/x', '/api/admin/webhooks/../deliveries', '/api/./admin', '/ui/%2e/x', '/a/..'])(
    '%s → 400 invalid_path (it reached another route)',
    async (target) => {
      const res = await rawGet(listener.port, target)
      expect(res.status).toBe(400)
      expect(res.type).toBe('application/problem+json')
      expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_path' })
    },
  )

  it.each(['/api/admin/webhooks/abc.def', '/ui/assets/app.js', '/a/...b/c', '/a?x=/../y'])('%s passes', async (target) => {
    expect((await rawGet(listener.port, target)).status).toBe(200)
  })

  it('the check is on the path only', () => {
    expect(hasDotSegment('/ok?next=/../x')).toBe(false)
    expect(hasDotSegment('/a/%2e%2e')).toBe(true)
  })
})
