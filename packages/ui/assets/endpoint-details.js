// The endpoint page's "Details": what the endpoint is (URL, types, scope, signatures, keys,
// dates) and, behind "Edit", the form that changes it in place of the list.
import { endpointEditForm } from './endpoint-edit.js'
import { FOLLOW_REDIRECTS_LABELS, ORDERING_LABELS, headersSummary, rateLimitSummary } from './endpoint-options-fields.js'
import { authenticationSummary } from './endpoint-auth-fields.js'
import { fill, h, orDash, time } from './ui.js'
import { SIGNATURE_SCHEME_LABELS, endpointState, eventTypeList } from './webhooks.js'

/**
 * The "Details" section. `render(endpoint)` redraws the list; the edit form is built from
 * `state.endpoint` when opened, and `onSaved(updated)` gets what the server saved.
 * @param {{ endpoint: any }} state
 * @param {{ signal: AbortSignal, onSaved: (updated: any) => void }} options
 */
export function endpointDetails(state, { signal, onSaved }) {
  const details = h('dl', { class: 'details' })
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
    const form = endpointEditForm(state.endpoint, { signal, onSaved, onClose: closeEdit })
    fill(editSlot, form)
    details.hidden = true
    edit.hidden = true
    edit.setAttribute('aria-expanded', 'true')
    form.querySelector('input')?.focus()
  })
  const section = h(
    'section',
    { 'aria-labelledby': 'details-heading' },
    h('div', { class: 'section-head' }, h('h2', { id: 'details-heading' }, 'Details'), edit),
    details,
    editSlot,
  )
  return { section, render: (/** @type {any} */ endpoint) => fill(details, detailRows(endpoint)) }
}

/** @param {any} endpoint */
function detailRows(endpoint) {
  return [
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
    row('Custom headers', headersSummary(endpoint) ?? orDash(null)),
    row('Authentication', authenticationSummary(endpoint) ?? orDash(null)),
    row('Redirects', FOLLOW_REDIRECTS_LABELS[endpoint.follow_redirects] ?? endpoint.follow_redirects),
    row('Rate limit', rateLimitSummary(endpoint) ?? 'none'),
    row('Delivery order', ORDERING_LABELS[endpoint.ordering] ?? endpoint.ordering ?? 'none'),
    row('ID', h('code', {}, endpoint.id)),
    row('Created', time(endpoint.created_at)),
    row('Updated', time(endpoint.updated_at)),
  ]
}

/** One term and its value in the details list. @param {string} term @param {...any} value */
const row = (term, ...value) => [h('dt', {}, term), h('dd', {}, ...value)]
