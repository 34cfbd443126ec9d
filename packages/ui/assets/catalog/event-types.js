// Integrations → Event types: the installation's catalog (built in and declared, with exposure,
// schema and deprecation) and a form to declare a type. Listing everything and declaring are
// operator operations (GET/POST /api/operator/event_types); signed in with an admin token the
// page lists the types an endpoint can subscribe to and asks for an operator token to declare,
// used for that one request and never stored.
import { api } from '../api.js'
import {
  badge,
  clearFieldErrors,
  fill,
  h,
  labelled,
  pageHeading,
  problemAlert,
  scrollable,
  showFieldError,
  successNotice,
  tableHead,
  uid,
} from '../ui.js'

export const EVENT_TYPES_PATH = '/ui/integrations/event-types'

const COLUMNS = ['Name', 'Exposure', 'Group', 'Description', 'Data schema', 'Status']

/** The catalog as this token may read it: every type (operator) or the subscribable ones (admin). */
async function catalogRead(signal) {
  try {
    const page = await api('GET', '/api/operator/event_types', { signal })
    return { operator: true, types: page.data }
  } catch (err) {
    if (err?.status !== 403) throw err
    const page = await api('GET', '/api/admin/webhooks/event_types', { signal })
    const types = page.data.map((t) => ({
      name: t.type, description: t.description, exposure: 'webhook', group: t.group,
      schema: t.schema ?? null, deprecated: t.deprecated ?? null, builtin: null, declared: null, reserved: false,
    }))
    return { operator: false, types }
  }
}

function statusOf(t) {
  const words = []
  if (t.reserved) words.push(badge('reserved'))
  if (t.builtin) words.push(h('span', { class: 'muted small' }, 'built in'))
  if (t.declared) words.push(h('span', { class: 'muted small' }, 'declared'))
  if (t.deprecated) {
    const sunset = t.deprecated.sunset_at ? `; refused from ${t.deprecated.sunset_at}` : ''
    words.push(h('span', { class: 'badge badge-discarded', title: `${t.deprecated.reason}${sunset}` }, 'deprecated'))
  }
  return words.length ? words.flatMap((w, i) => (i ? [' ', w] : [w])) : '—'
}

function schemaCell(schema) {
  if (!schema) return h('span', { class: 'muted' }, 'any object')
  return h('details', {}, h('summary', {}, 'JSON Schema'), h('pre', { class: 'code' }, JSON.stringify(schema, null, 2)))
}

function catalogTable(types) {
  const rows = types.map((t) =>
    labelled(
      COLUMNS,
      h(
        'tr',
        {},
        h('td', {}, h('code', {}, t.name)),
        h('td', {}, t.exposure),
        h('td', {}, t.group),
        h('td', {}, t.description || h('span', { class: 'muted' }, '—')),
        h('td', {}, schemaCell(t.schema)),
        h('td', {}, statusOf(t)),
      ),
    ),
  )
  return scrollable(h('table', { class: 'table stack' }, tableHead(COLUMNS), h('tbody', {}, rows)))
}

/** One labelled control of the declare form. */
function field(label, control, hint) {
  const hintId = hint ? `${control.id}-hint` : null
  if (hintId) control.setAttribute('aria-describedby', hintId)
  return h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, label),
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    control,
  )
}

function declareForm({ operator, onDeclared }) {
  const controls = {
    name: h('input', { id: uid('et-name'), name: 'name', required: true, placeholder: 'order.created', autocomplete: 'off' }),
    exposure: h(
      'select',
      { id: uid('et-exposure'), name: 'exposure', required: true },
      h('option', { value: 'webhook' }, 'webhook — delivered to subscribed endpoints'),
      h('option', { value: 'internal' }, 'internal — recorded, never delivered'),
    ),
    group: h('input', { id: uid('et-group'), name: 'group', placeholder: 'custom', autocomplete: 'off' }),
    description: h('input', { id: uid('et-description'), name: 'description', maxlength: 500, autocomplete: 'off' }),
    schema: h('textarea', { id: uid('et-schema'), name: 'schema', rows: 6, spellcheck: 'false', placeholder: '{ "type": "object", "required": ["order_id"] }' }),
    token: operator ? null : h('input', { id: uid('et-token'), name: 'token', type: 'password', required: true, autocomplete: 'off' }),
  }
  const status = h('div', { role: 'status' })
  const submit = h('button', { type: 'submit', class: 'button' }, 'Declare event type')
  const form = h(
    'form',
    { class: 'card', novalidate: true },
    h('h2', {}, 'Declare an event type'),
    field('Name', controls.name, 'Dot-separated segments of letters, digits and _, e.g. order.created. Reserved: webhook.test, webhook.endpoint.*, webhook.delivery.*.'),
    field('Exposure', controls.exposure, 'Only webhook types ever leave the installation.'),
    field('Group (optional)', controls.group),
    field('Description (optional)', controls.description),
    field('Data schema (optional)', controls.schema, 'A JSON Schema (draft 2020-12) every event\u2019s data must match; a publish that breaks it is refused (422, naming the JSON pointer).'),
    controls.token ? field('Operator token', controls.token, 'Declaring is an operator operation. Used for this request only, never stored.') : null,
    status,
    h('div', { class: 'button-row' }, submit),
  )
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    clearFieldErrors(form)
    fill(status)
    const body = { name: controls.name.value.trim(), exposure: controls.exposure.value }
    if (controls.group.value.trim()) body.group = controls.group.value.trim()
    if (controls.description.value.trim()) body.description = controls.description.value.trim()
    if (controls.schema.value.trim()) {
      try {
        body.schema = JSON.parse(controls.schema.value)
      } catch {
        showFieldError(controls.schema, 'This is not valid JSON.')
        return
      }
    }
    if (controls.token && !controls.token.value.trim()) {
      showFieldError(controls.token, 'Paste an operator token (hookledger token create --scopes operator).')
      return
    }
    submit.disabled = true
    try {
      const declared = await api('POST', '/api/operator/event_types', {
        body,
        ...(controls.token ? { token: controls.token.value.trim() } : {}),
      })
      form.reset()
      fill(status, successNotice('Declared ', h('code', {}, declared.name), ` (${declared.exposure}). Applications may publish it now.`))
      await onDeclared()
    } catch (err) {
      const control = err?.field ? controls[err.field.split('.')[0]] : null
      if (control) showFieldError(control, err.detail ?? err.title)
      else if (err?.status === 401 && controls.token) showFieldError(controls.token, 'This token was refused.')
      else if (err?.status === 403 && controls.token) showFieldError(controls.token, 'This token has no operator scope.')
      else fill(status, problemAlert(err, 'Not declared.'))
    } finally {
      submit.disabled = false
    }
  })
  return form
}

export async function eventTypesPage({ main, signal }) {
  document.title = 'Event types · hookledger admin'
  const listing = h('div')
  const load = async () => {
    try {
      const { operator, types } = await catalogRead(signal)
      fill(
        listing,
        operator
          ? h('p', { class: 'muted' }, `${types.length} types: built in, and declared by this installation.`)
          : h('p', { class: 'muted' }, `${types.length} types endpoints can subscribe to. Internal types are listed with an operator token.`),
        catalogTable(types),
      )
      return operator
    } catch (err) {
      if (signal.aborted) throw err
      fill(listing, problemAlert(err, 'The catalog could not be read.'))
      return false
    }
  }
  const operator = await load()
  fill(main, pageHeading('Event types'), listing, declareForm({ operator, onDeclared: load }))
}
