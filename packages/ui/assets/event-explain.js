// @ts-check
// "Why did this endpoint (not) get event E?": one line per endpoint, from the ledger.
import { api } from './api.js'
import { DELIVERIES_PATH } from './deliveries-log.js'
import { endpointPagePath } from './webhooks.js'
import { breadcrumbs, fill, h, labelled, pageHeading, problemAlert, scrollable, tableHead, time } from './ui.js'

const COLUMNS = ['Endpoint', 'What happened', 'Delivery']

/** @type {Record<string, (v: any) => string>} */
const SAY = {
  pending: () => 'waiting to be sent',
  running: () => 'being sent now',
  retryable: () => 'failed, will be retried',
  completed: () => 'delivered',
  discarded: () => 'given up (discarded)',
  not_subscribed: (v) => `not subscribed: its event types are ${v.event_types.join(', ')}`,
  scope_denied: (v) => `scope denied: ${v.reason}`,
  endpoint_disabled: (v) => `the endpoint was disabled${v.reason ? ` (${v.reason.replaceAll('_', ' ')})` : ''}`,
  endpoint_deleted: () => 'the endpoint was deleted',
  created_after_event: () => 'the endpoint was created after the event',
  not_fanned_out_yet: () => 'not fanned out yet',
  internal_event: () => 'an internal event: never delivered',
  matched: () => 'matched; the delivery is no longer kept',
  not_addressed: () => 'a test event for another endpoint',
}

/** @param {{ main: HTMLElement, params: string[], signal: AbortSignal }} page */
export async function eventExplainPage({ main, params: [id], signal }) {
  document.title = 'Explain an event · hookledger admin'
  const crumbs = breadcrumbs(['Delivery log', DELIVERIES_PATH], ['Explain'])
  let answer
  try {
    answer = await api('GET', `/api/admin/events/${encodeURIComponent(id ?? '')}/explain`, { signal })
  } catch (err) {
    if (signal.aborted) return
    fill(main, crumbs, pageHeading(/** @type {any} */ (err).status === 404 ? 'Event not found' : 'Explain'), problemAlert(err, 'Could not explain the event.'))
    return
  }
  fill(
    main,
    crumbs,
    pageHeading('What happened to ', h('code', {}, answer.event.id)),
    h('p', {}, h('code', {}, answer.event.type), ', published ', time(answer.event.published_at), answer.decided_at ? [', fanned out ', time(answer.decided_at)] : ' — not fanned out yet', '.'),
    scrollable(
      h(
        'table',
        { class: 'table stack' },
        h('caption', { class: 'visually-hidden' }, 'One row per endpoint'),
        tableHead(COLUMNS),
        h(
          'tbody',
          {},
          answer.data.map((/** @type {any} */ v) =>
            labelled(COLUMNS, h(
              'tr',
              { 'data-verdict': v.verdict },
              h('td', { class: 'url-cell' }, v.deleted ? h('span', {}, v.url, ' (deleted)') : h('a', { href: endpointPagePath(v.endpoint_id) }, v.url)),
              h('td', {}, SAY[v.verdict]?.(v) ?? v.verdict),
              h('td', {}, v.delivery_id && v.verdict !== 'matched' ? h('a', { href: `/ui/deliveries/${encodeURIComponent(v.delivery_id)}` }, 'View attempts') : '—'),
            )),
          ),
        ),
      ),
    ),
  )
}
