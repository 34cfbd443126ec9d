// Integrations → Webhooks: the endpoint list, and what the endpoint screens share (the paths,
// the state word, the event type chips, the signature scheme labels). "Add endpoint" is
// endpoint-new.js.
import { api } from './api.js'
import {
  badge,
  breadcrumbs,
  fill,
  flash,
  h,
  humanize,
  labelled,
  pageHeading,
  problemAlert,
  scrollable,
  successNotice,
  tableHead,
  time,
} from './ui.js'
import { fillSparkline } from './endpoint-health-chart.js'

export const WEBHOOKS_PATH = '/ui/integrations/webhooks'
export const endpointPagePath = (id) => `${WEBHOOKS_PATH}/${encodeURIComponent(id)}`

const PAGE_SIZE = 50
const COLUMNS = ['URL', 'State', 'Last 24 h', 'Event types', 'Created']

/** The state word plus why: since when it fails, or the reason it was switched off. */
export function endpointState(endpoint) {
  return h(
    'span',
    { class: 'state' },
    badge(endpoint.state),
    endpoint.state === 'failing' && endpoint.failing_since
      ? h('span', { class: 'muted small' }, ' since ', time(endpoint.failing_since))
      : null,
    endpoint.state === 'disabled' && endpoint.disabled_reason
      ? h('span', { class: 'muted small' }, ` — ${humanize(endpoint.disabled_reason)}`)
      : null,
  )
}

export const eventTypeList = (types) =>
  h(
    'ul',
    { class: 'chips' },
    types.map((t) => h('li', {}, h('code', {}, t))),
  )

export async function webhooksPage({ main, signal }) {
  document.title = 'Webhooks · hookledger admin'
  const notice = flash.take('webhooks')
  const body = h('tbody')
  const list = {
    body,
    table: endpointTable(body),
    more: h('div', { class: 'button-row' }),
    status: h('div'),
    signal,
  }
  fill(
    main,
    webhooksHead(),
    notice ? successNotice(notice) : null,
    list.status,
    scrollable(list.table),
    list.more,
  )
  try {
    await loadEndpoints(list)
  } catch (err) {
    if (signal.aborted) return
    list.table.hidden = true
    list.status.append(problemAlert(err, 'Could not load the endpoints.'))
  }
}

/** The breadcrumbs, the heading with "Add endpoint", and what the page is for. */
const webhooksHead = () => [
  breadcrumbs(['Integrations', WEBHOOKS_PATH], ['Webhooks']),
  h(
    'div',
    { class: 'page-head' },
    pageHeading('Webhooks'),
    h('a', { class: 'button', href: `${WEBHOOKS_PATH}/new` }, 'Add endpoint'),
  ),
  h(
    'p',
    { class: 'lead' },
    "Endpoints receive this instance's events as signed HTTP POSTs (Standard Webhooks).",
  ),
]

/** The endpoint table around `body`, with its caption and column heads. */
function endpointTable(body) {
  return h(
    'table',
    { class: 'table stack' },
    h('caption', { class: 'visually-hidden' }, 'Webhook endpoints'),
    tableHead(COLUMNS),
    body,
  )
}

/** One endpoint's row; its 24-hour sparkline fills in when its stats arrive. */
function endpointRow(e, signal) {
  const health = h('td', { class: 'health-cell', 'data-health-of': e.id }, h('span', { class: 'muted small' }, '…'))
  void fillSparkline(health, e.id, signal)
  return labelled(COLUMNS, h(
    'tr',
    {},
    h(
      'td',
      { class: 'url-cell' },
      h('a', { href: endpointPagePath(e.id) }, e.url),
      e.description ? h('div', { class: 'muted small' }, e.description) : null,
    ),
    h('td', {}, endpointState(e)),
    health,
    h('td', {}, eventTypeList(e.event_types)),
    h('td', { class: 'nowrap' }, time(e.created_at, { short: true })),
  ))
}

/**
 * One page of endpoints (the first without `cursor`), appended to the table, then "Load more"
 * for the next; no endpoints at all says how to add one.
 */
async function loadEndpoints(list, cursor) {
  const { body, table, more, status, signal } = list
  const page = await api('GET', '/api/admin/webhooks', {
    query: { limit: PAGE_SIZE, cursor },
    signal,
  })
  for (const e of page.data) body.append(endpointRow(e, signal))
  if (!cursor && page.data.length === 0) {
    table.hidden = true
    status.append(noEndpointsYet())
  }
  fill(
    more,
    page.next_cursor
      ? h(
          'button',
          {
            type: 'button',
            class: 'button secondary',
            onclick: async (event) => {
              event.currentTarget.disabled = true
              await loadEndpoints(list, page.next_cursor).catch((err) =>
                status.append(problemAlert(err, 'Could not load more endpoints.')),
              )
            },
          },
          'Load more',
        )
      : null,
  )
}

const noEndpointsYet = () =>
  h(
    'div',
    { class: 'empty' },
    h('p', {}, 'No endpoints yet.'),
    h(
      'p',
      {},
      h('a', { href: `${WEBHOOKS_PATH}/new` }, 'Add an endpoint'),
      ' to start receiving events.',
    ),
  )

/** What each signature scheme puts in the webhook-signature header, for people. */
export const SIGNATURE_SCHEME_LABELS = {
  v1: 'v1 — HMAC-SHA256 with the whsec_ secret',
  v1a: 'v1a — ed25519, verified with the whpk_ public key',
  'v1+v1a': 'v1 and v1a — both signatures on every request',
}
