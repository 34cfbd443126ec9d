// One endpoint's deliveries, newest first, with a state filter, "Load more" and a live first page.
import { api, endpointPath } from './api.js'
import { badge, fill, h, labelled, orDash, problemAlert, scrollable, tableHead, time, truncated } from './ui.js'
import { snoozeSummary } from './view-format.js'

const DELIVERY_STATES = ['pending', 'running', 'retryable', 'completed', 'discarded']
const LOG_PAGE_SIZE = 25
const COLUMNS = ['Event', 'State', 'Attempts', 'Last result', 'Next attempt', 'Created', '']

/** The last answer's status and, when there was one, the error. */
function lastResult(d) {
  if (d.last_status === null && !d.last_error) return orDash(null)
  return [
    d.last_status === null ? null : h('span', { class: 'num' }, String(d.last_status)),
    d.last_status !== null && d.last_error ? ' · ' : null,
    d.last_error,
  ]
}

/**
 * What the log shows and where it stands: the requests of one loading of the first page are
 * told apart from the next by `generation`, so a late answer never overwrites a newer one.
 * @typedef {object} LogView
 * @property {string} id the endpoint
 * @property {AbortSignal} signal
 * @property {HTMLSelectElement} stateFilter
 * @property {HTMLElement} body the table's rows
 * @property {HTMLElement} table
 * @property {HTMLElement} status
 * @property {HTMLElement} more where "Load more" goes
 * @property {boolean} expanded older pages shown: the live refresh would drop them, so it pauses
 * @property {string} shown the first page on screen, as JSON
 * @property {boolean} failed the last loading of the first page failed
 * @property {number} generation
 */

/** The endpoint's deliveries, newest first, with a state filter, "Load more" and a live first page. */
export function deliveryLog(id, signal) {
  const body = h('tbody')
  /** @type {LogView} */
  const view = {
    id,
    signal,
    stateFilter: stateFilterSelect(),
    body,
    table: deliveryTable(body),
    status: h('div'),
    more: h('div', { class: 'button-row' }),
    expanded: false,
    shown: '',
    failed: false,
    generation: 0,
  }
  view.stateFilter.addEventListener('change', () => loadFirst(view, false))
  return {
    section: logSection(view),
    reload: () => loadFirst(view, false),
    refresh: () => (view.expanded ? Promise.resolve() : loadFirst(view, true)),
  }
}

function stateFilterSelect() {
  return h(
    'select',
    { id: 'delivery-state', name: 'state' },
    h('option', { value: '' }, 'All states'),
    DELIVERY_STATES.map((s) => h('option', { value: s }, s)),
  )
}

/** The "Delivery log" section: its heading, the filter and "Refresh", the table. @param {LogView} view */
function logSection(view) {
  return h(
    'section',
    { 'aria-labelledby': 'log-heading' },
    h(
      'div',
      { class: 'section-head' },
      h('h2', { id: 'log-heading' }, 'Delivery log'),
      h(
        'div',
        { class: 'toolbar' },
        h('label', { for: view.stateFilter.id }, 'State'),
        view.stateFilter,
        h(
          'button',
          { type: 'button', class: 'button secondary small', onclick: () => loadFirst(view, false) },
          'Refresh',
        ),
      ),
    ),
    h('p', { class: 'hint' }, 'Refreshes by itself every few seconds.'),
    view.status,
    scrollable(view.table),
    view.more,
  )
}

/** The table around `body`, with its caption and column heads. @param {HTMLElement} body */
function deliveryTable(body) {
  return h(
    'table',
    { class: 'table stack' },
    h('caption', { class: 'visually-hidden' }, 'Deliveries of this endpoint, newest first'),
    tableHead(COLUMNS, 'Attempts page'),
    body,
  )
}

/** One row per delivery, linking to its attempts. */
const rows = (deliveries) =>
  deliveries.map((d) =>
    labelled(COLUMNS, h(
      'tr',
      { 'data-delivery-id': d.id },
      h(
        'td',
        { class: 'event-cell' },
        h('code', { class: 'block' }, d.event_type),
        truncated(d.event_id, 'span', { class: 'muted small mono block' }),
      ),
      h('td', {}, badge(d.state)),
      h('td', { class: 'num' }, String(d.attempts), snoozeSummary(d) ? h('span', { class: 'muted small block nowrap' }, snoozeSummary(d)) : null),
      h('td', { class: 'error-cell' }, lastResult(d)),
      h('td', { class: 'nowrap' }, time(d.next_attempt_at, { short: true })),
      h('td', { class: 'nowrap' }, time(d.created_at, { short: true })),
      h(
        'td',
        { class: 'nowrap' },
        h(
          'a',
          { href: d.link },
          'View attempts',
          h('span', { class: 'visually-hidden' }, ` of ${d.event_id}`),
        ),
      ),
    )),
  )

/** "Load more" when there is an older page, nothing otherwise. @param {LogView} view */
const setMore = (view, cursor, filter) =>
  fill(
    view.more,
    cursor
      ? h(
          'button',
          {
            type: 'button',
            class: 'button secondary',
            onclick: (e) => loadMore(view, e.currentTarget, cursor, filter),
          },
          'Load more',
        )
      : null,
  )

/** The next older page, appended; dropped when the first page was loaded again meanwhile. @param {LogView} view */
async function loadMore(view, button, cursor, filter) {
  button.disabled = true
  const mine = view.generation
  try {
    const page = await api('GET', endpointPath(view.id, '/deliveries'), {
      query: { state: filter, limit: LOG_PAGE_SIZE, cursor },
      signal: view.signal,
    })
    if (mine !== view.generation) return
    view.expanded = true
    view.body.append(...rows(page.data))
    setMore(view, page.next_cursor, filter)
  } catch (err) {
    button.disabled = false
    if (!view.signal.aborted) fill(view.status, problemAlert(err, 'Could not load more deliveries.'))
  }
}

/**
 * The first page again; with `quiet` (the timer) nothing changes on screen unless the rows did.
 * @param {LogView} view @param {boolean} quiet
 */
async function loadFirst(view, quiet) {
  const mine = ++view.generation
  const filter = view.stateFilter.value
  try {
    const page = await api('GET', endpointPath(view.id, '/deliveries'), {
      query: { state: filter, limit: LOG_PAGE_SIZE },
      signal: view.signal,
    })
    if (mine !== view.generation) return
    const key = JSON.stringify(page)
    if (quiet && key === view.shown && !view.failed) return
    view.shown = key
    view.failed = false
    view.expanded = false
    fill(view.body, rows(page.data))
    view.table.hidden = page.data.length === 0
    view.status.replaceChildren()
    if (page.data.length === 0) view.status.append(emptyLog(filter))
    setMore(view, page.next_cursor, filter)
  } catch (err) {
    if (mine !== view.generation || view.signal.aborted) return
    view.failed = true
    fill(view.status, problemAlert(err, 'Could not load the deliveries.'))
  }
}

/** What an empty first page says: none of this state, or none at all yet. */
const emptyLog = (filter) =>
  h(
    'p',
    { class: 'empty' },
    filter
      ? `No ${filter} deliveries.`
      : 'No deliveries yet. Publish an event of a subscribed type, or use Send test.',
  )
