// One endpoint's deliveries, newest first, with a state filter, "Load more" and a live first page.
import { api, endpointPath } from './api.js'
import { badge, fill, h, orDash, problemAlert, scrollable, time } from './ui.js'

const DELIVERY_STATES = ['pending', 'running', 'retryable', 'completed', 'discarded']
const LOG_PAGE_SIZE = 25

/** The last answer's status and, when there was one, the error. */
function lastResult(d) {
  if (d.last_status === null && !d.last_error) return orDash(null)
  return [
    d.last_status === null ? null : h('span', { class: 'num' }, String(d.last_status)),
    d.last_status !== null && d.last_error ? ' · ' : null,
    d.last_error,
  ]
}

/** The endpoint's deliveries, newest first, with a state filter, "Load more" and a live first page. */
export function deliveryLog(id, signal) {
  const stateFilter = h(
    'select',
    { id: 'delivery-state', name: 'state' },
    h('option', { value: '' }, 'All states'),
    DELIVERY_STATES.map((s) => h('option', { value: s }, s)),
  )
  const body = h('tbody')
  const table = h(
    'table',
    { class: 'table' },
    h('caption', { class: 'visually-hidden' }, 'Deliveries of this endpoint, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Event', 'State', 'Attempts', 'Last result', 'Next attempt', 'Created'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Attempts page')),
      ),
    ),
    body,
  )
  const status = h('div')
  const more = h('div', { class: 'button-row' })
  /** Older pages shown: the live refresh would drop them, so it pauses. */
  let expanded = false
  let shown = ''
  let failed = false
  let generation = 0

  const rows = (deliveries) =>
    deliveries.map((d) =>
      h(
        'tr',
        { 'data-delivery-id': d.id },
        h(
          'td',
          { class: 'event-cell' },
          h('code', {}, d.event_type),
          h('div', { class: 'muted small mono' }, d.event_id),
        ),
        h('td', {}, badge(d.state)),
        h('td', { class: 'num' }, String(d.attempts)),
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
      ),
    )

  const setMore = (cursor, filter) =>
    fill(
      more,
      cursor
        ? h(
            'button',
            {
              type: 'button',
              class: 'button secondary',
              onclick: (e) => loadMore(e.currentTarget, cursor, filter),
            },
            'Load more',
          )
        : null,
    )

  async function loadMore(button, cursor, filter) {
    button.disabled = true
    const mine = generation
    try {
      const page = await api('GET', endpointPath(id, '/deliveries'), {
        query: { state: filter, limit: LOG_PAGE_SIZE, cursor },
        signal,
      })
      if (mine !== generation) return
      expanded = true
      body.append(...rows(page.data))
      setMore(page.next_cursor, filter)
    } catch (err) {
      button.disabled = false
      if (!signal.aborted) fill(status, problemAlert(err, 'Could not load more deliveries.'))
    }
  }

  /** The first page again; with `quiet` (the timer) nothing changes on screen unless the rows did. */
  async function loadFirst(quiet) {
    const mine = ++generation
    const filter = stateFilter.value
    try {
      const page = await api('GET', endpointPath(id, '/deliveries'), {
        query: { state: filter, limit: LOG_PAGE_SIZE },
        signal,
      })
      if (mine !== generation) return
      const key = JSON.stringify(page)
      if (quiet && key === shown && !failed) return
      shown = key
      failed = false
      expanded = false
      fill(body, rows(page.data))
      table.hidden = page.data.length === 0
      status.replaceChildren()
      if (page.data.length === 0) {
        status.append(
          h(
            'p',
            { class: 'empty' },
            filter
              ? `No ${filter} deliveries.`
              : 'No deliveries yet. Publish an event of a subscribed type, or use Send test.',
          ),
        )
      }
      setMore(page.next_cursor, filter)
    } catch (err) {
      if (mine !== generation || signal.aborted) return
      failed = true
      fill(status, problemAlert(err, 'Could not load the deliveries.'))
    }
  }

  stateFilter.addEventListener('change', () => loadFirst(false))
  const section = h(
    'section',
    { 'aria-labelledby': 'log-heading' },
    h(
      'div',
      { class: 'section-head' },
      h('h2', { id: 'log-heading' }, 'Delivery log'),
      h(
        'div',
        { class: 'toolbar' },
        h('label', { for: stateFilter.id }, 'State'),
        stateFilter,
        h(
          'button',
          { type: 'button', class: 'button secondary small', onclick: () => loadFirst(false) },
          'Refresh',
        ),
      ),
    ),
    h('p', { class: 'hint' }, 'Refreshes by itself every few seconds.'),
    status,
    scrollable(table),
    more,
  )
  return {
    section,
    reload: () => loadFirst(false),
    refresh: () => (expanded ? Promise.resolve() : loadFirst(true)),
  }
}
