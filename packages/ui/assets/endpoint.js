// One endpoint: details (and their edit form), the actions (enable/disable, send test,
// redeliver, rotate, delete), the one-time secret after create or rotate, its health chart and
// its delivery log. Each of the last four lives in its own module.
import { api, endpointPath } from './api.js'
import { navigate } from './router.js'
import { breadcrumbs, confirmDialog, every, fill, flash, h, orDash, pageHeading, problemAlert, successNotice, time } from './ui.js'
import { deliveryLog } from './endpoint-deliveries.js'
import { endpointEditForm } from './endpoint-edit.js'
import { endpointHealthSection } from './endpoint-health-chart.js'
import { secretPanel } from './endpoint-secret-panel.js'
import { SIGNATURE_SCHEME_LABELS, WEBHOOKS_PATH, endpointState, eventTypeList } from './webhooks.js'

const REFRESH_MS = 2000

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
  const health = endpointHealthSection(id, signal)
  const editSlot = h('div')
  const edit = h('button', { type: 'button', class: 'button secondary small', 'aria-expanded': 'false' }, 'Edit')
  const closeEdit = () => {
    editSlot.replaceChildren()
    details.hidden = false
    edit.hidden = false
    edit.setAttribute('aria-expanded', 'false')
    edit.focus()
  }
  edit.addEventListener('click', () => {
    const form = endpointEditForm(endpoint, {
      signal,
      onSaved: (updated) => {
        endpoint = updated
        renderEndpoint()
        say('Endpoint saved.')
      },
      onClose: closeEdit,
    })
    fill(editSlot, form)
    details.hidden = true
    edit.hidden = true
    edit.setAttribute('aria-expanded', 'true')
    form.querySelector('input')?.focus()
  })
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
      h('div', { class: 'section-head' }, h('h2', { id: 'details-heading' }, 'Details'), edit),
      details,
      editSlot,
    ),
    health.section,
    log.section,
  )
  renderEndpoint()
  await Promise.all([log.reload(), health.reload()])

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
    await Promise.all([log.refresh(), health.refresh()])
  })
}

const row = (term, ...value) => [h('dt', {}, term), h('dd', {}, ...value)]

