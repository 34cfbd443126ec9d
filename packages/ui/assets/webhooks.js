// Integrations → Webhooks: the endpoint list and the "Add endpoint" form.
import { api } from './api.js'
import { navigate } from './router.js'
import {
  badge,
  breadcrumbs,
  clearFieldErrors,
  fill,
  flash,
  h,
  humanize,
  pageHeading,
  problemAlert,
  scrollable,
  showFieldError,
  successNotice,
  time,
} from './ui.js'
import { fillSparkline } from './endpoint-health-chart.js'
import { chosenEventTypes, controlForField, eventTypeGroups } from './endpoint-form-fields.js'

export const WEBHOOKS_PATH = '/ui/integrations/webhooks'
export const endpointPagePath = (id) => `${WEBHOOKS_PATH}/${encodeURIComponent(id)}`

const PAGE_SIZE = 50

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
  const table = h(
    'table',
    { class: 'table' },
    h('caption', { class: 'visually-hidden' }, 'Webhook endpoints'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['URL', 'State', 'Last 24 h', 'Event types', 'Created'].map((c) => h('th', { scope: 'col' }, c)),
      ),
    ),
    body,
  )
  const more = h('div', { class: 'button-row' })
  const status = h('div')
  fill(
    main,
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
    notice ? successNotice(notice) : null,
    status,
    scrollable(table),
    more,
  )

  const addRows = (endpoints) => {
    for (const e of endpoints) {
      const health = h('td', { class: 'health-cell', 'data-health-of': e.id }, h('span', { class: 'muted small' }, '…'))
      void fillSparkline(health, e.id, signal)
      body.append(
        h(
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
        ),
      )
    }
  }
  const load = async (cursor) => {
    const page = await api('GET', '/api/admin/webhooks', {
      query: { limit: PAGE_SIZE, cursor },
      signal,
    })
    addRows(page.data)
    if (!cursor && page.data.length === 0) {
      table.hidden = true
      status.append(
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
        ),
      )
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
                await load(page.next_cursor).catch((err) =>
                  status.append(problemAlert(err, 'Could not load more endpoints.')),
                )
              },
            },
            'Load more',
          )
        : null,
    )
  }
  try {
    await load()
  } catch (err) {
    if (signal.aborted) return
    table.hidden = true
    status.append(problemAlert(err, 'Could not load the endpoints.'))
  }
}

/** What each signature scheme puts in the webhook-signature header, for people. */
export const SIGNATURE_SCHEME_LABELS = {
  v1: 'v1 — HMAC-SHA256 with the whsec_ secret',
  v1a: 'v1a — ed25519, verified with the whpk_ public key',
  'v1+v1a': 'v1 and v1a — both signatures on every request',
}

export async function newEndpointPage({ main, signal }) {
  document.title = 'Add endpoint · hookledger admin'
  const url = h('input', {
    id: 'endpoint-url',
    name: 'url',
    type: 'url',
    required: true,
    maxlength: '2048',
    placeholder: 'https://example.com/webhooks',
    autocomplete: 'off',
    'aria-describedby': 'endpoint-url-hint',
  })
  const description = h('input', {
    id: 'endpoint-description',
    name: 'description',
    type: 'text',
    maxlength: '1000',
    autocomplete: 'off',
  })
  const scheme = h(
    'select',
    { id: 'endpoint-signature-scheme', name: 'signature_scheme', 'aria-describedby': 'endpoint-signature-scheme-hint' },
    ...Object.entries(SIGNATURE_SCHEME_LABELS).map(([value, label]) => h('option', { value }, label)),
  )
  const globs = h('input', {
    id: 'endpoint-globs',
    name: 'globs',
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'endpoint-globs-hint',
  })
  const typesBox = h(
    'div',
    { class: 'event-types', id: 'event-types' },
    h('p', { class: 'muted' }, 'Loading event types…'),
  )
  const typesFieldset = h(
    'fieldset',
    { class: 'field', id: 'event-types-fieldset', 'aria-describedby': 'event-types-hint' },
    h('legend', {}, 'Event types'),
    h(
      'p',
      { class: 'hint', id: 'event-types-hint' },
      'Tick the events this endpoint should receive. Only webhook-visible types are listed.',
    ),
    typesBox,
  )
  const formNotice = h('div')
  const submit = h('button', { type: 'submit', class: 'button' }, 'Create endpoint')
  const form = h(
    'form',
    { class: 'card', novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: url.id }, 'Endpoint URL'),
      url,
      h(
        'p',
        { class: 'hint', id: 'endpoint-url-hint' },
        'http or https; it must resolve to a public address.',
      ),
    ),
    h(
      'div',
      { class: 'field' },
      h(
        'label',
        { for: description.id },
        'Description ',
        h('span', { class: 'muted' }, '(optional)'),
      ),
      description,
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: scheme.id }, 'Signatures'),
      scheme,
      h(
        'p',
        { class: 'hint', id: 'endpoint-signature-scheme-hint' },
        'v1a lets receivers verify with a public key, so they hold nothing that could forge a request.',
      ),
    ),
    typesFieldset,
    h(
      'div',
      { class: 'field' },
      h(
        'label',
        { for: globs.id },
        'More event types or globs ',
        h('span', { class: 'muted' }, '(optional)'),
      ),
      globs,
      h(
        'p',
        { class: 'hint', id: 'endpoint-globs-hint' },
        'Separated by commas or spaces. ',
        h('code', {}, 'booking.*'),
        ' matches one segment, ',
        h('code', {}, 'booking.**'),
        ' any depth, ',
        h('code', {}, '*'),
        ' every type.',
      ),
    ),
    formNotice,
    h(
      'div',
      { class: 'button-row' },
      submit,
      h('a', { class: 'button secondary', href: WEBHOOKS_PATH }, 'Cancel'),
    ),
  )

  fill(
    main,
    breadcrumbs(['Integrations', WEBHOOKS_PATH], ['Webhooks', WEBHOOKS_PATH], ['Add endpoint']),
    pageHeading('Add endpoint'),
    form,
  )

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    clearFieldErrors(form)
    formNotice.replaceChildren()
    const { eventTypes, typed } = chosenEventTypes(typesBox, globs)
    let focusTarget = null
    if (!url.value.trim()) {
      showFieldError(url, 'Enter the URL that should receive the events.')
      focusTarget = url
    }
    if (eventTypes.length === 0) {
      showFieldError(typesFieldset, 'Tick at least one event type, or type a glob below.')
      focusTarget ??= typesBox.querySelector('input') ?? globs
    }
    if (focusTarget) return focusTarget.focus()
    submit.disabled = true
    try {
      const created = await api('POST', '/api/admin/webhooks', {
        body: {
          url: url.value.trim(),
          description: description.value.trim(),
          event_types: eventTypes,
          signature_scheme: scheme.value,
        },
      })
      flash.set('endpoint', { secret: created.secret, created: true })
      navigate(endpointPagePath(created.endpoint.id))
    } catch (err) {
      const control = controlForField(err.field, eventTypes, typed, {
        url,
        description,
        globs,
        typesFieldset,
      })
      if (control) {
        showFieldError(control, `${err.detail ?? err.title}`)
        ;(control.matches('fieldset') ? control.querySelector('input') : control)?.focus()
      } else {
        formNotice.append(problemAlert(err, 'Could not create the endpoint.'))
      }
    } finally {
      submit.disabled = false
    }
  })

  try {
    const types = await api('GET', '/api/admin/webhooks/event_types', { signal })
    fill(typesBox, eventTypeGroups(types.data))
  } catch (err) {
    if (signal.aborted) return
    fill(typesBox, problemAlert(err, 'Could not load the event types; type them as globs below.'))
  }
}

