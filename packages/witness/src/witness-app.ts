import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import type { Clock } from '@hookledger/core'
import type { NoteSigner } from '@hookledger/ledger'
import { MAX_ADD_CHECKPOINT_BODY_BYTES, parseAddCheckpointRequest } from './add-checkpoint-request.js'
import { CONTENT_TYPE_TEXT, decideAddCheckpoint, type WitnessAnswer, witnessKnownLogs, type WitnessLogState } from './witness-decision.js'
import { witnessKeyInfo } from './witness-key-file.js'
import { originHash, type WitnessStateStore } from './witness-state-file.js'

/**
 * The witness over HTTP (c2sp.org/tlog-witness), the submission and monitoring prefix being
 * `prefix` (default: none):
 *
 *   POST <prefix>/add-checkpoint            the spec's answers (witness-decision.ts); 413 past the body limit
 *   GET  <prefix>/<origin hash>/checkpoint  the latest checkpoint cosigned for a log, with the log's
 *                                           verified signatures and the witness's; 404 if none
 *   GET  <prefix>/                          what this is: the witness's vkey and the logs it knows
 *
 * Bad input is answered 400, 403, 404, 409, 413 or 422, never 500: a 500 is only the witness's
 * own trouble (its state file unreadable or unwritable), and then nothing is cosigned.
 */

/** What happened to one add-checkpoint request, for the operator's log. */
export interface WitnessEvent {
  readonly status: number
  /** The refusal's code (witness-decision.ts), or `cosigned`. */
  readonly reason: string
  readonly origin: string | null
  /** The checkpoint's size, when the body parsed. */
  readonly size: number | string | null
  /** A validly signed checkpoint that failed a consistency check: possible evidence of log misbehaviour. */
  readonly evidence: boolean
  /** The request body, kept when `evidence` is true (the spec lets a witness log it). */
  readonly body?: string
}

export interface WitnessAppOptions {
  readonly key: NoteSigner
  /** The log vkeys this witness cosigns for (`<origin>+<key id>+<key>`); a log may list several keys. */
  readonly logs: readonly string[]
  readonly state: WitnessStateStore
  readonly clock: Clock
  /** The submission and monitoring prefix, e.g. `/witness` (no trailing slash); default none. */
  readonly prefix?: string
  /** Called once per add-checkpoint request answered. */
  readonly onEvent?: (event: WitnessEvent) => void
}

export function createWitnessApp(options: WitnessAppOptions): Hono {
  const prefix = options.prefix ?? ''
  if (prefix !== '' && !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(prefix)) throw new RangeError(`prefix ${JSON.stringify(prefix)} must be empty or /segment[/segment…], with no trailing slash`)
  const logs = witnessKnownLogs(options.logs)
  if (logs.size === 0) throw new RangeError('a witness needs at least one log key')
  const info = witnessKeyInfo(options.key)
  const origins = [...logs.keys()]
  const byHash = new Map(origins.map((origin) => [originHash(origin), origin]))
  const onEvent = options.onEvent ?? (() => {})
  const app = new Hono()
  const text = (c: Context, status: number, body: string, contentType = CONTENT_TYPE_TEXT) =>
    c.body(body, status as 200, { 'content-type': contentType, 'cache-control': 'no-store' })

  app.get(prefix === '' ? '/' : prefix, (c) => text(c, 200, describe()))
  if (prefix !== '') app.get(`${prefix}/`, (c) => text(c, 200, describe()))

  app.post(
    `${prefix}/add-checkpoint`,
    bodyLimit({ maxSize: MAX_ADD_CHECKPOINT_BODY_BYTES, onError: (c) => text(c, 413, `the body is larger than ${MAX_ADD_CHECKPOINT_BODY_BYTES} bytes\n`) }),
    async (c) => {
      const body = new Uint8Array(await c.req.arrayBuffer())
      const parsed = parseAddCheckpointRequest(body)
      if (!parsed.ok) {
        onEvent({ status: 400, reason: 'malformed_request', origin: null, size: null, evidence: false })
        return text(c, 400, `${parsed.reason}\n`)
      }
      const { request } = parsed
      const answer = await options.state.update(request.checkpoint.origin, (current): { next?: WitnessLogState; result: WitnessAnswer } => {
        const decided = decideAddCheckpoint({ logs, state: current, request, witness: options.key, now: options.clock.now() })
        return decided.status === 200 ? { next: decided.state, result: decided } : { result: decided }
      })
      const size = request.checkpoint.size <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(request.checkpoint.size) : request.checkpoint.size.toString()
      const evidence = answer.status !== 200 && answer.evidence
      onEvent({
        status: answer.status,
        reason: answer.status === 200 ? 'cosigned' : answer.reason,
        origin: request.checkpoint.origin,
        size,
        evidence,
        ...(evidence ? { body: Buffer.from(body).toString('utf8') } : {}),
      })
      return text(c, answer.status, answer.body, answer.contentType)
    },
  )
  app.all(`${prefix}/add-checkpoint`, (c) => {
    c.header('allow', 'POST')
    return text(c, 405, 'add-checkpoint takes a POST\n')
  })

  app.get(`${prefix}/:hash/checkpoint`, async (c) => {
    const origin = byHash.get(c.req.param('hash'))
    const state = origin === undefined ? null : await options.state.read(origin)
    if (state?.checkpoint === undefined) return text(c, 404, 'this witness has not cosigned a checkpoint of that log\n')
    return text(c, 200, state.checkpoint)
  })

  app.notFound((c) => text(c, 404, 'not found\n'))
  app.onError((_error, c) => text(c, 500, 'the witness could not answer (its state could not be read or written); nothing was cosigned\n'))
  return app

  function describe(): string {
    return [
      'hookledger witness (c2sp.org/tlog-witness): cosigns checkpoints of the logs below once they are',
      'consistent with the last one it cosigned (Ed25519 cosignature/v1).',
      '',
      `vkey ${info.vkey}`,
      ...origins.map((origin) => `log ${origin}`),
      '',
      `POST ${prefix}/add-checkpoint`,
      `GET  ${prefix}/<sha256 of the origin, hex>/checkpoint`,
      '',
    ].join('\n')
  }
}
