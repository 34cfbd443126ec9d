// "Edit endpoint": URL, description, event types (the same type boxes as "Add endpoint") and
// the request options (custom headers, redirects),
// saved with `webhooks.update` (PATCH). The endpoint keeps its id, secret and history.
import { api, endpointPath } from './api.js'
import { chosenEventTypes, controlForField, eventTypeGroups } from './endpoint-form-fields.js'
import { endpointOptionsFields } from './endpoint-options-fields.js'
import { endpointAuthFields } from './endpoint-auth-fields.js'
import { clearFieldErrors, fill, h, problemAlert, showFieldError } from './ui.js'

/**
 * The edit form for `endpoint`, built when opened. `onSaved(updated)` gets the new endpoint;
 * `onClose()` is called on save and on cancel.
 */
export function endpointEditForm(endpoint, { signal, onSaved, onClose }) {
  const controls = editControls(endpoint)
  const notice = h('div')
  const save = h('button', { type: 'submit', class: 'button' }, 'Save changes')
  const form = editFormMarkup(controls, notice, save, onClose)
  form.addEventListener(
    'submit',
    saveEdit(form, controls, { endpoint, notice, save, signal, onSaved, onClose }),
  )
  loadEditEventTypes(endpoint, controls, signal)
  return form
}

/** The form's controls, filled from `endpoint` (its event types once the catalog is in). */
function editControls(endpoint) {
  const url = h('input', { id: 'edit-endpoint-url', name: 'url', type: 'url', required: true, maxlength: '2048', autocomplete: 'off', value: endpoint.url })
  const description = h('input', { id: 'edit-endpoint-description', name: 'description', type: 'text', maxlength: '1000', autocomplete: 'off', value: endpoint.description })
  const globs = h('input', { id: 'edit-endpoint-globs', name: 'globs', type: 'text', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'edit-endpoint-globs-hint' })
  const typesBox = h('div', { class: 'event-types', id: 'edit-event-types' }, h('p', { class: 'muted' }, 'Loading event types…'))
  const typesFieldset = h(
    'fieldset',
    { class: 'field', id: 'edit-event-types-fieldset' },
    h('legend', {}, 'Event types'),
    typesBox,
  )
  return { url, description, globs, typesBox, typesFieldset, options: endpointOptionsFields(endpoint), auth: endpointAuthFields(endpoint) }
}

/** The form itself: the fields with their labels and hints, the notice, Save and Cancel. */
function editFormMarkup({ url, description, globs, typesFieldset, options, auth }, notice, save, onClose) {
  return h(
    'form',
    { class: 'card edit-form', novalidate: true, 'aria-labelledby': 'edit-endpoint-heading' },
    h('h3', { id: 'edit-endpoint-heading' }, 'Edit endpoint'),
    h('div', { class: 'field' }, h('label', { for: url.id }, 'URL'), url),
    h('div', { class: 'field' }, h('label', { for: description.id }, 'Description ', h('span', { class: 'muted' }, '(optional)')), description),
    typesFieldset,
    h(
      'div',
      { class: 'field' },
      h('label', { for: globs.id }, 'More event types or globs ', h('span', { class: 'muted' }, '(optional)')),
      globs,
      h('p', { class: 'hint', id: 'edit-endpoint-globs-hint' }, 'Separated by commas or spaces, e.g. ', h('code', {}, 'booking.*'), '.'),
    ),
    options.field,
    auth.field,
    notice,
    h(
      'div',
      { class: 'button-row' },
      save,
      h('button', { type: 'button', class: 'button secondary', onclick: () => onClose() }, 'Cancel'),
    ),
  )
}

/**
 * The submit handler: checked here first (a URL, at least one type), then saved; a problem
 * the server pins on a field is shown under that field.
 */
function saveEdit(form, controls, { endpoint, notice, save, signal, onSaved, onClose }) {
  const { url, description, globs, typesBox, typesFieldset, options, auth } = controls
  return async (event) => {
    event.preventDefault()
    clearFieldErrors(form)
    notice.replaceChildren()
    const { eventTypes, typed } = chosenEventTypes(typesBox, globs)
    const target = url.value.trim()
    let focus = null
    if (!target) {
      showFieldError(url, 'Enter the URL that should receive the events.')
      focus = url
    } else if (!/^https?:\/\//i.test(target)) {
      showFieldError(url, 'URL must start with http:// or https://')
      focus = url
    }
    if (eventTypes.length === 0) {
      showFieldError(typesFieldset, 'Tick at least one event type, or type a glob below.')
      focus ??= typesBox.querySelector('input') ?? globs
    }
    if (focus) return focus.focus()
    save.disabled = true
    try {
      const updated = await api('PATCH', endpointPath(endpoint.id), {
        body: { url: target, description: description.value.trim(), event_types: eventTypes, ...options.read(), ...auth.read() },
      })
      onSaved(updated)
      onClose()
    } catch (err) {
      const control = /^(mtls|oauth2)\b/.test(err.field ?? '')
        ? auth.field
        : /^(headers|follow_redirects|rate_limit|ordering)\b/.test(err.field ?? '')
        ? options.field
        : controlForField(err.field, eventTypes, typed, { url, description, globs, typesFieldset })
      if (control) {
        showFieldError(control, `${err.detail ?? err.title}`)
        ;(control.matches('fieldset') ? control.querySelector('input') : control)?.focus()
      } else if (!signal.aborted) {
        notice.append(problemAlert(err, 'Could not save the endpoint.'))
      }
    } finally {
      save.disabled = false
    }
  }
}

/** The catalog's exact types are ticked; any other glob stays typed. */
function loadEditEventTypes(endpoint, { globs, typesBox }, signal) {
  void api('GET', '/api/admin/webhooks/event_types', { signal }).then(
    (types) => {
      const known = new Set(types.data.map((t) => t.type))
      fill(typesBox, eventTypeGroups(types.data, endpoint.event_types))
      globs.value = endpoint.event_types.filter((t) => !known.has(t)).join(', ')
    },
    (err) => {
      if (signal.aborted) return
      globs.value = endpoint.event_types.join(', ')
      fill(typesBox, problemAlert(err, 'Could not load the event types; edit them as globs below.'))
    },
  )
}
