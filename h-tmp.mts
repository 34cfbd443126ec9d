import { Hono } from 'hono'
const app = new Hono()
app.get('/a/lit', (c) => c.text('lit'))
app.get('/a/:id', (c) => c.text('id ' + c.req.param('id')))
app.put('/b/:id', (c) => c.text('put'))
app.notFound((c)=>c.text('nf '+c.req.method+' '+c.req.path, 404))
app.onError((e,c)=>c.text('err '+e.message, 500))
for (const [m,p] of [['GET','/a/lit'],['GET','/a/x%20y'],['GET','/a/%E0%A4%A'],['HEAD','/a/lit'],['GET','/a/'],['PUT','/b/1'],['OPTIONS','/a/lit'],['GET','/a/%00'], ['GET', '/a//x'], ['GET','/a/lit?x=1&x=2']]) {
  const r = await app.request(p, { method: m })
  console.log(m, p, r.status, JSON.stringify(await r.text()))
}
