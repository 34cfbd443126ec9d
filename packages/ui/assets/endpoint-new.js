// Integrations → Webhooks → "Add endpoint": the form (URL, description, signatures, event
// types, globs), checked here first and then by the server, whose refusals land on the field at
// fault. A created endpoint opens on its page, with its one-time secret handed over in memory.
import { api } from './api.js'
import { navigate } from './router.js'
import {
  breadcrumbs,
  clearFieldErrors,
  fill,
  flash,
  h,
  pageHeading,
  problemAlert,
  showFieldError,
} from './ui.js'
import { chosenEventTypes, controlForField, eventTypeGroups } from './endpoint-form-fields.js'
import { endpointOptionsFields } from './endpoint-options-fields.js'
import { endpointAuthFields } from './endpoint-auth-fields.js'
import { SIGNATURE_SCHEME_LABELS, WEBHOOKS_PATH, endpointPagePath } from './webhooks.js'

export async function newEndpointPage({ main, signal }) {
  document.title = 'Add endpoint · hookledger admin'
  const url = urlField()
  const description = descriptionField()
  const scheme = schemeField()
  const types = eventTypesField()
  const globs = globsField()
  const options = endpointOptionsFields()
  const auth = endpointAuthFields()
  const controls = {
    url: url.control,
    description: description.control,
    scheme: scheme.control,
    globs: globs.control,
    typesBox: types.box,
    typesFieldset: types.field,
    options,
    auth,
  }
  const formNotice = h('div')
  const submit = h('button', { type: 'submit', class: 'button' }, 'Create endpoint')
  const form = h(
    'form',
    { class: 'card', novalidate: true },
    url.field,
    description.field,
    scheme.field,
    types.field,
    globs.field,
    options.field,
    auth.field,
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
  form.addEventListener('submit', createEndpoint(form, controls, formNotice, submit))
  await loadEventTypes(types.box, signal)
}

function urlField() {
  const control = h('input', {
    id: 'endpoint-url',
    name: 'url',
    type: 'url',
    required: true,
    maxlength: '2048',
    placeholder: 'https://example.com/webhooks',
    autocomplete: 'off',
    'aria-describedby': 'endpoint-url-hint',
  })
  const field = h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, 'Endpoint URL'),
    control,
    h(
      'p',
      { class: 'hint', id: 'endpoint-url-hint' },
      'http or https; it must resolve to a public address.',
    ),
  )
  return { control, field }
}

function descriptionField() {
  const control = h('input', {
    id: 'endpoint-description',
    name: 'description',
    type: 'text',
    maxlength: '1000',
    autocomplete: 'off',
  })
  const field = h(
    'div',
    { class: 'field' },
    h(
      'label',
      { for: control.id },
      'Description ',
      h('span', { class: 'muted' }, '(optional)'),
    ),
    control,
  )
  return { control, field }
}

/** The signature scheme: v1 (HMAC), v1a (ed25519) or both. */
function schemeField() {
  const control = h(
    'select',
    { id: 'endpoint-signature-scheme', name: 'signature_scheme', 'aria-describedby': 'endpoint-signature-scheme-hint' },
    ...Object.entries(SIGNATURE_SCHEME_LABELS).map(([value, label]) => h('option', { value }, label)),
  )
  const field = h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, 'Signatures'),
    control,
    h(
      'p',
      { class: 'hint', id: 'endpoint-signature-scheme-hint' },
      'v1a lets receivers verify with a public key, so they hold nothing that could forge a request.',
    ),
  )
  return { control, field }
}

/** The event type boxes: `box` fills in once the catalog is loaded; `field` is their fieldset. */
function eventTypesField() {
  const box = h(
    'div',
    { class: 'event-types', id: 'event-types' },
    h('p', { class: 'muted' }, 'Loading event types…'),
  )
  const field = h(
    'fieldset',
    { class: 'field', id: 'event-types-fieldset', 'aria-describedby': 'event-types-hint' },
    h('legend', {}, 'Event types'),
    h(
      'p',
      { class: 'hint', id: 'event-types-hint' },
      'Tick the events this endpoint should receive. Only webhook-visible types are listed.',
    ),
    box,
  )
  return { box, field }
}

/** Event types or globs typed by hand, beside the ticked ones. */
function globsField() {
  const control = h('input', {
    id: 'endpoint-globs',
    name: 'globs',
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'endpoint-globs-hint',
  })
  const field = h(
    'div',
    { class: 'field' },
    h(
      'label',
      { for: control.id },
      'More event types or globs ',
      h('span', { class: 'muted' }, '(optional)'),
    ),
    control,
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
  )
  return { control, field }
}

/**
 * The submit handler: a URL and at least one type are checked here; then the endpoint is
 * created and its page opened, or the server's refusal shown under the field it names.
 */
function createEndpoint(form, controls, formNotice, submit) {
  const { url, description, scheme, globs, typesBox, typesFieldset, options, auth } = controls
  return async (event) => {
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
          ...options.read(),
          ...auth.read(),
        },
      })
      flash.set('endpoint', { secret: created.secret, created: true })
      navigate(endpointPagePath(created.endpoint.id))
    } catch (err) {
      const control = /^(mtls|oauth2)\b/.test(err.field ?? '')
        ? auth.field
        : /^(headers|follow_redirects|rate_limit|ordering)\b/.test(err.field ?? '')
        ? options.field
        : controlForField(err.field, eventTypes, typed, { url, description, globs, typesFieldset })
      if (control) {
        showFieldError(control, `${err.detail ?? err.title}`)
        ;(control.matches('fieldset') ? control.querySelector('input') : control)?.focus()
      } else {
        formNotice.append(problemAlert(err, 'Could not create the endpoint.'))
      }
    } finally {
      submit.disabled = false
    }
  }
}

/** The catalog's webhook-visible types as boxes; without it, the globs field still works. */
async function loadEventTypes(typesBox, signal) {
  try {
    const types = await api('GET', '/api/admin/webhooks/event_types', { signal })
    fill(typesBox, eventTypeGroups(types.data))
  } catch (err) {
    if (signal.aborted) return
    fill(typesBox, problemAlert(err, 'Could not load the event types; type them as globs below.'))
  }
}
