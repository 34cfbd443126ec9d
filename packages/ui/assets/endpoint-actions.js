// The endpoint page's "Actions": enable/disable, send test, redeliver discarded, recover what
// it missed since a time (counted first), rotate the secret, delete. Each runs with its button busy and says what happened (or the problem) under
// the buttons; the page redraws after each, since most of them change the endpoint.
import { api, endpointPath } from './api.js'
import { navigate } from './router.js'
import { confirmDialog, fill, flash, h, plural, problemAlert, successNotice, uid } from './ui.js'
import { isoToLocalInput, localInputToIso } from './view-format.js'
import { WEBHOOKS_PATH } from './webhooks.js'

/**
 * What an action may touch. `state.endpoint` is the endpoint on screen (an action that gets a
 * new one from the server replaces it); `render()` redraws the page from it.
 * @typedef {object} ActionContext
 * @property {string} id
 * @property {{ endpoint: any }} state
 * @property {(...message: any[]) => void} say
 * @property {() => void} render
 * @property {(secret: string, created: boolean) => void} showSecret
 * @property {{ reload: () => Promise<void> }} log
 */

/**
 * The "Actions" section. `say(...)` puts a success message under the buttons (the edit form
 * uses it too); `render(endpoint)` sets the buttons' words and which of them may be pressed.
 * @param {string} id
 * @param {Omit<ActionContext, 'id' | 'say'> & { signal: AbortSignal }} page
 */
export function endpointActions(id, { state, signal, render, showSecret, log }) {
  const buttons = actionButtons()
  const notice = h('div', { class: 'action-notice' })
  const say = (/** @type {any[]} */ ...message) => fill(notice, successNotice(...message))
  /** @type {ActionContext} */
  const context = { id, state, say, render, showSecret, log }
  /** @param {HTMLButtonElement} button @param {(c: ActionContext) => Promise<void>} action */
  const on = (button, action) =>
    button.addEventListener('click', busy(button, notice, { signal, render }, () => action(context)))
  on(buttons.toggle, toggleEnabled)
  on(buttons.sendTest, sendTest)
  on(buttons.redeliver, redeliverDiscarded)
  on(buttons.recover, (c) => recoverMissed(c, buttons, false))
  on(buttons.recoverSend, (c) => recoverMissed(c, buttons, true))
  on(buttons.rotate, rotateSecret)
  on(buttons.remove, deleteEndpoint)
  return {
    section: actionsSection(buttons, notice),
    say,
    render: (/** @type {any} */ endpoint) => renderActionButtons(buttons, endpoint),
  }
}

/** The buttons and the hints beside them; the endpoint's state sets their words. */
function actionButtons() {
  return {
    toggle: h('button', { type: 'button', class: 'button' }),
    sendTest: h('button', { type: 'button', class: 'button secondary' }, 'Send test'),
    redeliver: h(
      'button',
      { type: 'button', class: 'button secondary' },
      'Redeliver discarded',
    ),
    recover: h('button', { type: 'button', class: 'button secondary' }, 'Find missed events'),
    recoverSend: h('button', { type: 'button', class: 'button', hidden: '' }, 'Send them'),
    recoverSince: h('input', { type: 'datetime-local', id: uid('recover-since'), step: '1' }),
    rotate: h('button', { type: 'button', class: 'button secondary' }, 'Rotate secret'),
    remove: h('button', { type: 'button', class: 'button danger' }, 'Delete endpoint'),
    toggleHint: h('span', { class: 'hint' }),
    sendTestHint: h('span', { class: 'hint' }),
    redeliverHint: h('span', { class: 'hint' }),
  }
}

/** @typedef {ReturnType<typeof actionButtons>} ActionButtons */

/** @param {ActionButtons} b @param {HTMLElement} notice */
function actionsSection(b, notice) {
  return h(
    'section',
    { 'aria-labelledby': 'actions-heading' },
    h('h2', { id: 'actions-heading' }, 'Actions'),
    h(
      'div',
      { class: 'actions' },
      h('div', {}, b.toggle, b.toggleHint),
      h('div', {}, b.sendTest, b.sendTestHint),
      h('div', {}, b.redeliver, b.redeliverHint),
      h(
        'div',
        { class: 'recover' },
        h('label', { for: b.recoverSince.id }, 'Missed since'),
        b.recoverSince,
        b.recover,
        b.recoverSend,
        h('span', { class: 'hint' }, 'Events it matches but did not get (disabled, not yet subscribed, discarded).'),
      ),
      h('div', {}, b.rotate, h('span', { class: 'hint' }, 'The new secret is shown once.')),
      h('div', {}, b.remove),
    ),
    notice,
  )
}

/**
 * A disabled endpoint can be enabled, not tested or redelivered.
 * @param {ActionButtons} b @param {any} endpoint
 */
function renderActionButtons(b, endpoint) {
  b.toggle.textContent = endpoint.enabled ? 'Disable endpoint' : 'Enable endpoint'
  b.toggleHint.textContent = endpoint.enabled
    ? 'A disabled endpoint gets no new deliveries.'
    : 'Enabling it clears its failure state.'
  b.sendTest.disabled = b.redeliver.disabled = b.recover.disabled = b.recoverSend.disabled = !endpoint.enabled
  // A day back by default: what a receiver that was down since yesterday missed.
  if (!b.recoverSince.value) b.recoverSince.value = isoToLocalInput(new Date(Date.now() - 86_400_000).toISOString())
  b.sendTestHint.textContent = endpoint.enabled
    ? 'Sends one webhook.test event to this endpoint only.'
    : 'Enable the endpoint to send a test.'
  b.redeliverHint.textContent = endpoint.enabled
    ? 'Re-sends every discarded delivery, with a fresh attempt budget.'
    : 'Enable the endpoint to redeliver.'
}

/**
 * Runs one action with its button busy; a problem is shown next to the actions.
 * @param {HTMLButtonElement} button @param {HTMLElement} notice
 * @param {{ signal: AbortSignal, render: () => void }} page @param {() => Promise<void>} fn
 */
const busy = (button, notice, { signal, render }, fn) => async () => {
  button.disabled = true
  button.setAttribute('aria-busy', 'true')
  notice.replaceChildren()
  try {
    await fn()
  } catch (err) {
    if (!signal.aborted) notice.append(problemAlert(err))
  } finally {
    button.removeAttribute('aria-busy')
    button.disabled = false
    // After a delete the page is gone: nothing to redraw (and the title is the list's now).
    if (!signal.aborted) render()
  }
}

/** @param {ActionContext} c */
async function toggleEnabled({ id, state, say }) {
  state.endpoint = await api('PATCH', endpointPath(id), { body: { enabled: !state.endpoint.enabled } })
  say(
    state.endpoint.enabled
      ? 'Endpoint enabled; its failure state was cleared.'
      : 'Endpoint disabled. It gets no new deliveries until you enable it.',
  )
}

/** @param {ActionContext} c */
async function sendTest({ id, say, log }) {
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
}

/** @param {ActionContext} c */
async function redeliverDiscarded({ id, say, log }) {
  const { requeued, skipped } = await api('POST', endpointPath(id, '/redeliver'))
  say(
    `Redeliver: ${requeued} requeued, ${skipped} skipped`,
    skipped > 0 ? ' (their events were pruned).' : '.',
  )
  await log.reload()
}

/**
 * `webhooks.recover`: counted first (a dry run), then sent on the second button, a batch per
 * call until the window is done.
 * @param {ActionContext} c @param {ActionButtons} b @param {boolean} send
 */
async function recoverMissed({ id, say, log }, b, send) {
  const since = localInputToIso(b.recoverSince.value)
  if (!send) {
    const r = await api('POST', endpointPath(id, '/recover'), { body: { since, dry_run: true } })
    const more = r.next_cursor ? ' (more beyond these: send, then count again)' : ''
    b.recoverSend.hidden = r.would_enqueue === 0
    say(`${plural(r.would_enqueue, 'missed event')} to send; ${r.already_delivered} already delivered, ${r.in_flight} on their way${more}.`)
    return
  }
  let enqueued = 0
  let cursor = null
  do {
    const r = await api('POST', endpointPath(id, '/recover'), { body: { since, ...(cursor ? { cursor } : {}) } })
    enqueued += r.enqueued
    cursor = r.next_cursor
  } while (cursor)
  b.recoverSend.hidden = true
  say(`Recovered: ${plural(enqueued, 'event')} queued for this endpoint.`)
  await log.reload()
}

/** @param {ActionContext} c */
async function rotateSecret({ id, state, say, render, showSecret }) {
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
    state.endpoint = { ...state.endpoint, public_key }
    render()
  }
  say(public_key ? 'Secret and v1a key pair rotated.' : 'Secret rotated.')
}

/** @param {ActionContext} c */
async function deleteEndpoint({ id, state }) {
  const ok = await confirmDialog({
    title: 'Delete this endpoint?',
    body: `${state.endpoint.url} will get no more deliveries; its waiting deliveries are discarded. This cannot be undone.`,
    confirmLabel: 'Delete endpoint',
    danger: true,
  })
  if (!ok) return
  const res = await api('DELETE', endpointPath(id))
  const discarded = res?.discarded ?? 0
  flash.set(
    'webhooks',
    `Deleted ${state.endpoint.url}${discarded > 0 ? `; ${discarded} waiting deliveries were discarded` : ''}.`,
  )
  navigate(WEBHOOKS_PATH)
}
