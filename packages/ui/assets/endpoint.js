// One endpoint: details, the actions (enable/disable, send test, redeliver, rotate, delete),
// the one-time secret after create or rotate, and the delivery log.
import { api, endpointPath } from './api.js'
import { navigate } from './router.js'
import {
  badge,
  breadcrumbs,
  confirmDialog,
  every,
  fill,
  flash,
  h,
  orDash,
  pageHeading,
  problemAlert,
  scrollable,
  successNotice,
  time,
} from './ui.js'
import { SIGNATURE_SCHEME_LABELS, WEBHOOKS_PATH, endpointState, eventTypeList } from './webhooks.js'

const DELIVERY_STATES = ['pending', 'running', 'retryable', 'completed', 'discarded']
const LOG_PAGE_SIZE = 25
const REFRESH_MS = 2000

/** The secret, once: copy button, and the warning that it cannot be shown again. */
function secretPanel(secret, { created }) {
  const input = h('input', {
    id: 'one-time-secret',
    type: 'text',
    readonly: true,
    value: secret,
    class: 'mono',
    spellcheck: 'false',
    'aria-describedby': 'one-time-secret-warning',
  })
  const copied = h('span', { class: 'muted small', role: 'status' })
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret)
      copied.textContent = 'Copied to the clipboard.'
    } catch {
      input.focus()
      input.select()
      copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.'
    }
  }
  const panel = h(
    'section',
    { class: 'secret-panel', 'aria-labelledby': 'one-time-secret-heading' },
    h(
      'h2',
      { id: 'one-time-secret-heading' },
      created ? 'Endpoint created: its signing secret' : 'New signing secret',
    ),
    h(
      'p',
      { class: 'warning', id: 'one-time-secret-warning' },
      h('strong', {}, 'Copy this secret now: it will not be shown again. '),
      created
        ? 'Your receiver verifies the webhook-signature header with it.'
        : 'The previous secret keeps signing alongside it for the grace window, so update the receiver soon.',
    ),
    h(
      'div',
      { class: 'secret-row' },
      h('label', { for: input.id, class: 'visually-hidden' }, 'Signing secret'),
      input,
      h('button', { type: 'button', class: 'button', onclick: copy }, 'Copy'),
    ),
    copied,
    h(
      'div',
      { class: 'button-row' },
      h(
        'button',
        { type: 'button', class: 'button secondary', onclick: () => panel.remove() },
        'I have stored it',
      ),
    ),
  )
  return panel
}

export async function endpointPage({ main, params: [id], signal }) {
  document.title = 'Endpoint · hookledger admin'
  const handedOver = flash.take('endpoint')
  let endpoint
  try {
    endpoint = await api('GET', endpointPath(id), { signal })
  } catch (err) {
    if (signal.aborted) return
    fill(
      main,
      breadcrumbs(['Integrations', WEBHOOKS_PATH], ['Webhooks', WEBHOOKS_PATH], ['Endpoint']),
      pageHeading(err.status === 404 ? 'Endpoint not found' : 'Endpoint'),
      err.status === 404
        ? h(
            'p',
            {},
            'It may have been deleted. ',
            h('a', { href: WEBHOOKS_PATH }, 'Back to Webhooks'),
            '.',
          )
        : problemAlert(err, 'Could not load the endpoint.'),
    )
    return
  }

  const heading = pageHeading()
  const headState = h('div', { class: 'head-state' })
  const secretSlot = h('div')
  const details = h('dl', { class: 'details' })
  const actionNotice = h('div', { class: 'action-notice' })

  const toggle = h('button', { type: 'button', class: 'button' })
  const sendTest = h('button', { type: 'button', class: 'button secondary' }, 'Send test')
  const redeliver = h(
    'button',
    { type: 'button', class: 'button secondary' },
    'Redeliver discarded',
  )
  const rotate = h('button', { type: 'button', class: 'button secondary' }, 'Rotate secret')
  const remove = h('button', { type: 'button', class: 'button danger' }, 'Delete endpoint')
  const toggleHint = h('span', { class: 'hint' })
  const sendTestHint = h('span', { class: 'hint' })
  const redeliverHint = h('span', { class: 'hint' })

  const showSecret = (secret, created) => fill(secretSlot, secretPanel(secret, { created }))
  if (handedOver?.secret) showSecret(handedOver.secret, handedOver.created)

  const renderEndpoint = () => {
    document.title = `${endpoint.url} · Webhooks · hookledger admin`
    fill(heading, h('span', { class: 'break' }, endpoint.url))
    fill(headState, endpointState(endpoint))
    fill(
      details,
      row('URL', h('span', { class: 'break' }, endpoint.url)),
      row('Description', orDash(endpoint.description)),
      row('State', endpointState(endpoint)),
      row('Event types', eventTypeList(endpoint.event_types)),
      row('Scope', endpoint.embed_id ? ['embed ', h('code', {}, endpoint.embed_id)] : 'standalone'),
      row('Signatures', SIGNATURE_SCHEME_LABELS[endpoint.signature_scheme] ?? endpoint.signature_scheme),
      row(
        'Public key (v1a)',
        endpoint.public_key
          ? h('code', { class: 'break', id: 'endpoint-public-key' }, endpoint.public_key)
          : orDash(null),
      ),
      row('ID', h('code', {}, endpoint.id)),
      row('Created', time(endpoint.created_at)),
      row('Updated', time(endpoint.updated_at)),
    )
    toggle.textContent = endpoint.enabled ? 'Disable endpoint' : 'Enable endpoint'
    toggleHint.textContent = endpoint.enabled
      ? 'A disabled endpoint gets no new deliveries.'
      : 'Enabling it clears its failure state.'
    sendTest.disabled = redeliver.disabled = !endpoint.enabled
    sendTestHint.textContent = endpoint.enabled
      ? 'Sends one webhook.test event to this endpoint only.'
      : 'Enable the endpoint to send a test.'
    redeliverHint.textContent = endpoint.enabled
      ? 'Re-sends every discarded delivery, with a fresh attempt budget.'
      : 'Enable the endpoint to redeliver.'
  }

  /** Runs one action with its button busy; a problem is shown next to the actions. */
  const act = (button, fn) => async () => {
    button.disabled = true
    button.setAttribute('aria-busy', 'true')
    actionNotice.replaceChildren()
    try {
      await fn()
    } catch (err) {
      if (!signal.aborted) actionNotice.append(problemAlert(err))
    } finally {
      button.removeAttribute('aria-busy')
      button.disabled = false
      // After a delete the page is gone: nothing to redraw (and the title is the list's now).
      if (!signal.aborted) renderEndpoint()
    }
  }
  const say = (...message) => fill(actionNotice, successNotice(...message))

  toggle.addEventListener(
    'click',
    act(toggle, async () => {
      endpoint = await api('PATCH', endpointPath(id), { body: { enabled: !endpoint.enabled } })
      say(
        endpoint.enabled
          ? 'Endpoint enabled; its failure state was cleared.'
          : 'Endpoint disabled. It gets no new deliveries until you enable it.',
      )
    }),
  )
  sendTest.addEventListener(
    'click',
    act(sendTest, async () => {
      const sent = await api('POST', endpointPath(id, '/send_test'))
      say(
        'Test event ',
        h('code', {}, sent.event_id),
        ' queued. ',
        h(
          'a',
          { href: `/ui/deliveries/${encodeURIComponent(sent.delivery_id)}` },
          'View its delivery',
        ),
        '.',
      )
      await log.reload()
    }),
  )
  redeliver.addEventListener(
    'click',
    act(redeliver, async () => {
      const { requeued, skipped } = await api('POST', endpointPath(id, '/redeliver'))
      say(
        `Redeliver: ${requeued} requeued, ${skipped} skipped`,
        skipped > 0 ? ' (their events were pruned).' : '.',
      )
      await log.reload()
    }),
  )
  rotate.addEventListener(
    'click',
    act(rotate, async () => {
      const ok = await confirmDialog({
        title: 'Rotate the signing secret?',
        body: 'A new secret is created and shown once. The current one keeps signing alongside it for the grace window, so receivers can switch over.',
        confirmLabel: 'Rotate secret',
      })
      if (!ok) return
      const { secret, public_key } = await api('POST', endpointPath(id, '/rotate_secret'))
      showSecret(secret, false)
      // An endpoint with a v1a key pair got a new one too: its public key is not a secret.
      if (public_key) {
        endpoint = { ...endpoint, public_key }
        renderEndpoint()
      }
      say(public_key ? 'Secret and v1a key pair rotated.' : 'Secret rotated.')
    }),
  )
  remove.addEventListener(
    'click',
    act(remove, async () => {
      const ok = await confirmDialog({
        title: 'Delete this endpoint?',
        body: `${endpoint.url} will get no more deliveries; its waiting deliveries are discarded. This cannot be undone.`,
        confirmLabel: 'Delete endpoint',
        danger: true,
      })
      if (!ok) return
      const res = await api('DELETE', endpointPath(id))
      const discarded = res?.discarded ?? 0
      flash.set(
        'webhooks',
        `Deleted ${endpoint.url}${discarded > 0 ? `; ${discarded} waiting deliveries were discarded` : ''}.`,
      )
      navigate(WEBHOOKS_PATH)
    }),
  )

  const log = deliveryLog(id, signal)
  fill(
    main,
    breadcrumbs(['Integrations', WEBHOOKS_PATH], ['Webhooks', WEBHOOKS_PATH], ['Endpoint']),
    heading,
    headState,
    secretSlot,
    h(
      'section',
      { 'aria-labelledby': 'actions-heading' },
      h('h2', { id: 'actions-heading' }, 'Actions'),
      h(
        'div',
        { class: 'actions' },
        h('div', {}, toggle, toggleHint),
        h('div', {}, sendTest, sendTestHint),
        h('div', {}, redeliver, redeliverHint),
        h('div', {}, rotate, h('span', { class: 'hint' }, 'The new secret is shown once.')),
        h('div', {}, remove),
      ),
      actionNotice,
    ),
    h(
      'section',
      { 'aria-labelledby': 'details-heading' },
      h('h2', { id: 'details-heading' }, 'Details'),
      details,
    ),
    log.section,
  )
  renderEndpoint()
  await log.reload()

  every(REFRESH_MS, signal, async () => {
    try {
      const fresh = await api('GET', endpointPath(id), { signal })
      if (fresh.updated_at !== endpoint.updated_at) {
        endpoint = fresh
        renderEndpoint()
      }
    } catch {
      // The log's own refresh shows what is wrong; a 401 has already signed the user out.
    }
    await log.refresh()
  })
}

const row = (term, ...value) => [h('dt', {}, term), h('dd', {}, ...value)]

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
function deliveryLog(id, signal) {
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
