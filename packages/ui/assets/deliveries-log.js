// @ts-check
// The owner's delivery log across endpoints, newest first, with filters in the URL's query
// (deliveries-log-filters.js). Each row names its endpoint, so one event's rows on several
// endpoints tell apart.
import { api } from './api.js'
import { navigate } from './router.js'
import { resendButton } from './delivery-actions.js'
import { DELIVERIES_PATH, logFilterForm, LOG_FILTERS } from './deliveries-log-filters.js'
import { logLookups } from './owner-endpoints.js'
import { badge, fill, h, labelled, orDash, pageHeading, problemAlert, scrollable, showFieldError, tableHead, time, truncated, uid, waitingWords } from './ui.js'
import { endpointName, snoozeSummary } from './view-format.js'
import { endpointPagePath } from './webhooks.js'

export { DELIVERIES_PATH }
const COLUMNS = ['Created', 'Endpoint', 'Event', 'State', 'Attempts', 'Last status', 'Why waiting', '']

/** @param {{ main: HTMLElement, signal: AbortSignal }} page */
export async function deliveriesLogPage({ main, signal }) {
  document.title = 'Delivery log · hookledger admin'
  const query = new URLSearchParams(location.search)
  const lookups = await logLookups(signal)
  const { form, controls } = logFilterForm(query, lookups)
  const status = h('div', { 'aria-live': 'polite' })
  const list = h('div')
  const lookupProblem = lookups.problem ? problemAlert(lookups.problem, 'Endpoint names or event types are missing.') : null
  fill(main, pageHeading('Delivery log'), lookupProblem, form, explainForm(), status, list)
  /** @param {string | undefined} cursor */
  const load = async (cursor) => {
    const q = Object.fromEntries(LOG_FILTERS.map((f) => [f, query.get(f) ?? undefined]))
    try {
      const page = await api('GET', '/api/admin/deliveries', { query: { ...q, cursor, limit: 50 }, signal })
      list.append(logTable(page.data, { status, endpoints: lookups.endpoints }))
      if (page.next_cursor)
        list.append(h('button', { type: 'button', class: 'button secondary', onclick: (/** @type {Event} */ ev) => { /** @type {HTMLElement} */ (ev.currentTarget).remove(); load(page.next_cursor) } }, 'Older deliveries'))
      else if (page.data.length === 0 && !cursor) list.append(h('p', { class: 'empty' }, 'No deliveries match.'))
    } catch (err) {
      if (signal.aborted) return
      // A filter the API refused is marked on its control, as a form's field would be.
      const control = /** @type {Record<string, HTMLElement>} */ (controls)[/** @type {any} */ (err).field ?? '']
      if (control) showFieldError(control, /** @type {any} */ (err).detail ?? /** @type {any} */ (err).title)
      status.replaceChildren(problemAlert(err, 'Could not load the log.'))
    }
  }
  await load(undefined)
}

function explainForm() {
  const id = uid('explain')
  return h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Explain an event',
      onsubmit: (/** @type {SubmitEvent} */ ev) => {
        ev.preventDefault()
        const v = String(new FormData(/** @type {HTMLFormElement} */ (ev.currentTarget)).get('event_id') ?? '').trim()
        if (v) navigate(`/ui/events/${encodeURIComponent(v)}/explain`)
      },
    },
    h('div', { class: 'field' }, h('label', { for: id }, 'Why did an endpoint (not) get event…'), h('input', { id, name: 'event_id', type: 'text', placeholder: 'evt_…' })),
    h('button', { type: 'submit', class: 'button secondary' }, 'Explain'),
  )
}

/**
 * @typedef {{ status: HTMLElement, endpoints: Map<string, any> | null }} LogContext
 * @param {any[]} rows @param {LogContext} context
 */
function logTable(rows, context) {
  if (rows.length === 0) return h('div')
  return scrollable(
    h(
      'table',
      { class: 'table stack log-table' },
      h('caption', { class: 'visually-hidden' }, 'Deliveries, newest first'),
      tableHead(COLUMNS, 'Actions'),
      h('tbody', {}, rows.map((d) => logRow(d, context))),
    ),
  )
}

/**
 * The endpoint as people know it, linked to its page: its description over its URL, or the
 * URL alone; an endpoint the list did not have, by id.
 * @param {Map<string, any> | null} endpoints @param {string} id
 */
function endpointCell(endpoints, id) {
  const e = endpoints?.get(id)
  if (!e) return h('td', { class: 'endpoint-cell' }, truncated(id, 'code'))
  // At most two lines each (the whole on hover): a URL's end is often what tells two apart.
  const clamped = (/** @type {string} */ tag, /** @type {string} */ text, /** @type {Record<string, string>} */ attrs = {}) =>
    h(tag, { ...attrs, class: `clamp ${attrs['class'] ?? ''}`.trim(), title: text }, text)
  return h(
    'td',
    { class: 'endpoint-cell', 'data-endpoint-id': id },
    clamped('a', endpointName(e), { href: endpointPagePath(id) }),
    e.description.trim() ? clamped('span', e.url, { class: 'muted small' }) : null,
  )
}

/** @param {any} d @param {LogContext} context */
function logRow(d, { status, endpoints }) {
  const state = h('td', {}, badge(d.state))
  const actions = h('td', { class: 'row-actions' })
  const renderActions = (/** @type {any} */ row) =>
    fill(actions, h('a', { href: `/ui/deliveries/${encodeURIComponent(row.id)}` }, 'View attempts'), ' ', resendButton(row, (fresh) => { fill(state, badge(fresh.state)); renderActions(fresh) }, status))
  renderActions(d)
  const snoozes = snoozeSummary(d)
  return labelled(
    COLUMNS,
    h(
      'tr',
      { 'data-delivery-id': d.id },
      h('td', { class: 'created-cell' }, time(d.created_at, { short: true })),
      endpointCell(endpoints, d.endpoint_id),
      h('td', { class: 'event-cell' }, h('code', { class: 'block' }, d.event_type), truncated(d.event_id, 'span', { class: 'muted small mono block' })),
      state,
      h('td', { class: 'num' }, String(d.attempts), snoozes ? h('span', { class: 'muted small block nowrap' }, snoozes) : null),
      h('td', { class: 'num' }, orDash(d.last_status)),
      h('td', { class: 'small waiting-cell' }, waitingWords(d.waiting_reason)),
      actions,
    ),
  )
}
