// One delivery (the `link` of every delivery row): its attempts from the ledger, grouped by
// run, and who started each run (the first enqueue, then each redelivery).
import { api } from './api.js'
import {
  badge,
  breadcrumbs,
  describeActor,
  every,
  fill,
  h,
  orDash,
  pageHeading,
  plural,
  problemAlert,
  time,
  waitingWords,
} from './ui.js'
import { WEBHOOKS_PATH, endpointPagePath } from './webhooks.js'
import { attemptExchange } from './attempt-exchange.js'
import { attemptTable } from './attempt-table.js'
import { snoozeSummary } from './view-format.js'
import { resendButton } from './delivery-actions.js'

const FINAL_STATES = new Set(['completed', 'discarded'])
const REFRESH_MS = 2000

/** Integrations › Webhooks › (its endpoint) › Delivery. */
const deliveryCrumbs = (endpointId) =>
  breadcrumbs(
    ['Integrations', WEBHOOKS_PATH],
    ['Webhooks', WEBHOOKS_PATH],
    ...(endpointId ? [['Endpoint', endpointPagePath(endpointId)]] : []),
    ['Delivery'],
  )

/** A delivery that could not be read: gone (404, e.g. its endpoint was deleted) or a problem. */
function showDeliveryUnreadable(main, err) {
  fill(
    main,
    deliveryCrumbs(null),
    pageHeading(err.status === 404 ? 'Delivery not found' : 'Delivery'),
    err.status === 404
      ? h('p', {}, 'It may belong to a deleted endpoint. ', h('a', { href: WEBHOOKS_PATH }, 'Back to Webhooks'), '.')
      : problemAlert(err, 'Could not load the delivery.'),
  )
}

export async function deliveryPage({ main, params: [id], signal }) {
  document.title = 'Delivery · hookledger admin'
  const load = () => api('GET', `/api/admin/deliveries/${encodeURIComponent(id)}/attempts`, { signal })
  let answer
  try {
    answer = await load()
  } catch (err) {
    if (!signal.aborted) showDeliveryUnreadable(main, err)
    return
  }
  const content = h('div')
  const status = h('div', { 'aria-live': 'polite' })
  const refresh = async () => {
    answer = await load()
    render()
  }
  const render = () =>
    fill(
      content,
      status,
      h('p', { class: 'actions' }, resendButton(answer.delivery, () => refresh().catch(() => {}), status)),
      summary(answer.delivery),
      runSections(answer),
    )
  const { delivery } = answer
  document.title = `Delivery of ${delivery.event_type} · hookledger admin`
  fill(main, deliveryCrumbs(delivery.endpoint_id), pageHeading('Delivery of ', h('code', {}, delivery.event_type)), content)
  render()

  // Until the delivery is settled, new attempts keep arriving.
  every(REFRESH_MS, signal, async () => {
    if (FINAL_STATES.has(answer.delivery.state)) return
    try {
      const fresh = await load()
      if (JSON.stringify(fresh) === JSON.stringify(answer)) return
      answer = fresh
      render()
    } catch {
      // Shown on the next full load; a 401 has already signed the user out.
    }
  })
}

function summary(d) {
  const row = (term, ...value) => [h('dt', {}, term), h('dd', {}, ...value)]
  return h(
    'dl',
    { class: 'details' },
    row('State', badge(d.state)),
    row('Event', h('code', { class: 'break' }, d.event_id)),
    row(
      'Attempts',
      String(d.attempts),
      d.run > 1 ? h('span', { class: 'muted' }, ` in run ${d.run}`) : null,
      d.snoozes ? h('span', { class: 'muted' }, `, and ${snoozeSummary(d)}: Retry-After postponements, no attempt spent`) : null,
    ),
    row('Last status', orDash(d.last_status)),
    row('Last error', orDash(d.last_error)),
    row('Next attempt', time(d.next_attempt_at)),
    d.waiting_reason ? row('Why waiting', waitingWords(d.waiting_reason)) : null,
    row('Created', time(d.created_at)),
    row('Updated', time(d.updated_at)),
    row('Delivery ID', h('code', { class: 'break' }, d.id)),
  )
}

/** One section per run, newest last, each with how it began and its attempts. */
function runSections({ runs, data }) {
  const numbers = [...new Set([...runs.map((r) => r.run), ...data.map((a) => a.run)])].sort(
    (a, b) => a - b,
  )
  if (numbers.length === 0) return h('p', { class: 'empty' }, 'No attempts yet.')
  return numbers.map((n) => {
    const run = runs.find((r) => r.run === n)
    const attempts = data.filter((a) => a.run === n)
    const headingId = `run-${n}`
    return h(
      'section',
      { class: 'run', 'aria-labelledby': headingId },
      h('h2', { id: headingId }, `Run ${n}`),
      run ? h('p', { class: 'muted' }, runOrigin(run)) : null,
      attempts.length === 0
        ? h('p', { class: 'empty' }, 'No attempts in this run yet.')
        : attemptSection(n, attempts),
    )
  })
}

function runOrigin(run) {
  if (run.previous_attempts === null)
    return ['Enqueued by ', describeActor(run.actor), ' at ', time(run.started_at), '.']
  return [
    'Redelivered by ',
    h('strong', {}, describeActor(run.actor)),
    ' at ',
    time(run.started_at),
    `, after ${plural(run.previous_attempts, 'attempt')} in the run before.`,
  ]
}

const attemptSection = (run, attempts) => [attemptTable(run, attempts), attempts.map(attemptExchange)]
