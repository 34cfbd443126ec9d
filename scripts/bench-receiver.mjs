// The bench's loopback receiver, run in its own process (child_process.fork) so that it does not
// share an event loop with the dispatcher. It answers every request with 204 (a path starting
// `/slow/<ms>/` after that many milliseconds: a slow receiver), counts them, and —
// while recording — keeps [webhook-id, path, arrival ms] where arrival is
// `performance.timeOrigin + performance.now()` taken when the request's headers arrive.
//
// IPC (parent → child): { op: 'reset' } | { op: 'record', on } | { op: 'waitFor', n, ref }
//   | { op: 'dump', ref } | { op: 'count', ref } | { op: 'clock', ref }
// IPC (child → parent): { op: 'ready', port } and a reply { op, ref, … } for each request above.
import { createServer } from 'node:http'

const now = () => performance.timeOrigin + performance.now()

let count = 0
let recording = false
let arrivals = []
let waiters = []

const server = createServer((req, res) => {
  const at = now()
  count++
  if (recording) arrivals.push([req.headers['webhook-id'] ?? '', req.url ?? '', at])
  req.on('data', () => {})
  const slow = /^\/slow\/(\d+)\//.exec(req.url ?? '')
  req.on('end', () => (slow ? setTimeout(answer, Number(slow[1])) : answer()))
  const answer = () => {
    res.writeHead(204)
    res.end()
    if (waiters.length > 0) {
      waiters = waiters.filter((w) => {
        if (count < w.n) return true
        process.send?.({ op: 'waitFor', ref: w.ref, count, at: now() })
        return false
      })
    }
  }
})
server.keepAliveTimeout = 60_000
server.headersTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  process.send?.({ op: 'ready', port: server.address().port, pid: process.pid })
})

process.on('message', (m) => {
  switch (m.op) {
    case 'reset':
      count = 0
      arrivals = []
      waiters = []
      process.send?.({ op: 'reset', ref: m.ref })
      break
    case 'record':
      recording = Boolean(m.on)
      process.send?.({ op: 'record', ref: m.ref })
      break
    case 'waitFor':
      if (count >= m.n) process.send?.({ op: 'waitFor', ref: m.ref, count, at: now() })
      else waiters.push({ n: m.n, ref: m.ref })
      break
    case 'dump':
      process.send?.({ op: 'dump', ref: m.ref, arrivals, count })
      break
    case 'count':
      process.send?.({ op: 'count', ref: m.ref, count })
      break
    case 'clock':
      process.send?.({ op: 'clock', ref: m.ref, at: now() })
      break
    case 'exit':
      server.closeAllConnections()
      server.close(() => process.exit(0))
      break
  }
})
process.on('disconnect', () => process.exit(0))
