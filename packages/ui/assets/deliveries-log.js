// @ts-check
// The owner's delivery log across endpoints, newest first, with filters in the URL's query.
import { api } from './api.js'
import { navigate } from './router.js'
import { resendButton } from './delivery-actions.js'
import { badge, fill, h, orDash, pageHeading, problemAlert, scrollable, time, uid } from './ui.js'

export const DELIVERIES_PATH = '/ui/deliveries'
const FILTERS = ['endpoint_id', 'state', 'event_type', 'since', 'until']
const STATES = ['', 'pending', 'running', 'retryable', 'completed', 'discarded']

/** @param {{ main: HTMLElement, signal: AbortSignal }} page */
export async function deliveriesLogPage({ main, signal }) {
  document.title = 'Delivery log · hookledger admin'
  const query = new URLSearchParams(location.search)
  const status = h('div', { 'aria-live': 'polite' })
  const list = h('div')
  fill(main, pageHeading('Delivery log'), filterForm(query), explainForm(), status, list)
  /** @param {string | undefined} cursor */
  const load = async (cursor) => {
    const q = Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? undefined]))
    try {
      const page = await api('GET', '/api/admin/deliveries', { query: { ...q, cursor, limit: 50 }, signal })
      list.append(logTable(page.data, status))
      if (page.next_cursor)
        list.append(h('button', { type: 'button', class: 'button secondary', onclick: (/** @type {Event} */ ev) => { /** @type {HTMLElement} */ (ev.currentTarget).remove(); load(page.next_cursor) } }, 'Older deliveries'))
      else if (page.data.length === 0 && !cursor) list.append(h('p', { class: 'empty' }, 'No deliveries match.'))
    } catch (err) {
      if (!signal.aborted) status.replaceChildren(problemAlert(err, 'Could not load the log.'))
    }
  }
  await load(undefined)
}

/** @param {URLSearchParams} query */
function filterForm(query) {
  /** @param {string} name @param {string} label @param {HTMLElement} control */
  const field = (name, label, control) => {
    const id = uid(name)
    control.id = id
    control.setAttribute('name', name)
    return h('div', { class: 'field' }, h('label', { for: id }, label), control)
  }
  const state = h('select', {}, STATES.map((s) => h('option', { value: s, selected: (query.get('state') ?? '') === s }, s || 'any')))
  return h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Filter deliveries',
      onsubmit: (/** @type {SubmitEvent} */ ev) => {
        ev.preventDefault()
        const data = new FormData(/** @type {HTMLFormElement} */ (ev.currentTarget))
        const next = new URLSearchParams()
        for (const f of FILTERS) {
          const v = String(data.get(f) ?? '').trim()
          if (v) next.set(f, v)
        }
        navigate(`${DELIVERIES_PATH}${next.size ? `?${next}` : ''}`)
      },
    },
    field('event_type', 'Event type', h('input', { type: 'text', value: query.get('event_type') ?? '', placeholder: 'booking.created' })),
    field('state', 'State', state),
    field('endpoint_id', 'Endpoint ID', h('input', { type: 'text', value: query.get('endpoint_id') ?? '' })),
    field('since', 'Since (ISO time)', h('input', { type: 'text', value: query.get('since') ?? '' })),
    field('until', 'Until (ISO time)', h('input', { type: 'text', value: query.get('until') ?? '' })),
    h('button', { type: 'submit', class: 'button' }, 'Filter'),
  )
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

/** @param {any[]} rows @param {HTMLElement} status */
function logTable(rows, status) {
  if (rows.length === 0) return h('div')
  return scrollable(
    h(
      'table',
      { class: 'table' },
      h('caption', { class: 'visually-hidden' }, 'Deliveries, newest first'),
      h('thead', {}, h('tr', {}, ['Created', 'Event', 'Type', 'State', 'Attempts', 'Last status', 'Why waiting', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((d) => logRow(d, status))),
    ),
  )
}

/** @param {any} d @param {HTMLElement} status */
function logRow(d, status) {
  const state = h('td', {}, badge(d.state))
  const actions = h('td', { class: 'nowrap' })
  const renderActions = (/** @type {any} */ row) =>
    fill(actions, h('a', { href: `/ui/deliveries/${encodeURIComponent(row.id)}` }, 'View attempts'), ' ', resendButton(row, (fresh) => { fill(state, badge(fresh.state)); renderActions(fresh) }, status))
  renderActions(d)
  return h(
    'tr',
    {},
    h('td', { class: 'nowrap' }, time(d.created_at, { short: true })),
    h('td', {}, h('code', {}, d.event_id)),
    h('td', {}, h('code', {}, d.event_type)),
    state,
    h('td', { class: 'num' }, String(d.attempts)),
    h('td', { class: 'num' }, orDash(d.last_status)),
    h('td', { class: 'small' }, orDash(d.waiting_reason?.text ?? null)),
    actions,
  )
}
