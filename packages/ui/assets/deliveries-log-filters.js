// @ts-check
// The delivery log's filters: the endpoint by its name, the state, the event type from the
// catalog, and when the delivery was created, with date-time pickers. The page's query holds
// the API's own parameters (`endpoint_id`, `state`, `event_type`, `since`, `until` as ISO
// times), so a filtered log can be shared and reloaded; submitting navigates to the new query.
import { navigate } from './router.js'
import { clearFieldErrors, h, showFieldError, uid } from './ui.js'
import { endpointName, isoToLocalInput, localInputToIso } from './view-format.js'

export const DELIVERIES_PATH = '/ui/deliveries'
export const LOG_FILTERS = /** @type {const} */ (['endpoint_id', 'state', 'event_type', 'since', 'until'])
const STATES = ['pending', 'running', 'retryable', 'completed', 'discarded']

/** @typedef {Record<typeof LOG_FILTERS[number], HTMLInputElement | HTMLSelectElement>} FilterControls */

/** @param {string} name @param {string} label @param {HTMLInputElement | HTMLSelectElement} control */
function field(name, label, control) {
  control.id = uid(`log-${name}`)
  control.name = name
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control)
}

/** @param {string} value @param {string} text @param {boolean} selected */
const option = (value, text, selected) => h('option', { value, selected }, text)

/**
 * One option per endpoint, named as people know it (description, then URL); an id the list
 * lacks (another owner's, a deleted one) stays selected, so the API can say what is wrong.
 * @param {Map<string, any> | null} endpoints @param {string} current
 */
function endpointSelect(endpoints, current) {
  const known = [...(endpoints?.values() ?? [])]
  const label = (/** @type {any} */ e) => (e.description.trim() ? `${endpointName(e)} — ${e.url}` : e.url)
  return /** @type {HTMLSelectElement} */ (
    h(
      'select',
      {},
      option('', 'Any endpoint', !current),
      known.map((e) => option(e.id, label(e), e.id === current)),
      current && !endpoints?.has(current) ? option(current, `Endpoint ${current}`, true) : null,
    )
  )
}

/**
 * The catalog's types by group; a typed box when the catalog could not be read.
 * @param {{ type: string, group: string }[] | null} types @param {string} current
 */
function eventTypeSelect(types, current) {
  if (!types) return /** @type {HTMLInputElement} */ (h('input', { type: 'text', value: current, spellcheck: 'false' }))
  /** @type {Map<string, string[]>} */
  const groups = new Map()
  for (const t of types) groups.set(t.group || 'other', [...(groups.get(t.group || 'other') ?? []), t.type])
  return /** @type {HTMLSelectElement} */ (
    h(
      'select',
      {},
      option('', 'Any type', !current),
      [...groups].map(([group, list]) => h('optgroup', { label: group }, list.map((t) => option(t, t, t === current)))),
      current && !types.some((t) => t.type === current) ? option(current, current, true) : null,
    )
  )
}

/** A date-time picker holding `iso`; the exact ISO time is kept while the picker shows it. @param {string | null} iso */
function timeInput(iso) {
  const input = /** @type {HTMLInputElement} */ (h('input', { type: 'datetime-local', value: isoToLocalInput(iso) }))
  if (iso) input.dataset['iso'] = iso
  return input
}

/**
 * The filter form, filled from the page's query.
 * @param {URLSearchParams} query
 * @param {{ endpoints: Map<string, any> | null, types: { type: string, group: string }[] | null }} lookups
 */
export function logFilterForm(query, { endpoints, types }) {
  const q = (/** @type {string} */ name) => query.get(name) ?? ''
  /** @type {FilterControls} */
  const controls = {
    endpoint_id: endpointSelect(endpoints, q('endpoint_id')),
    state: /** @type {HTMLSelectElement} */ (h('select', {}, option('', 'Any state', !q('state')), STATES.map((s) => option(s, s, s === q('state'))))),
    event_type: eventTypeSelect(types, q('event_type')),
    since: timeInput(query.get('since')),
    until: timeInput(query.get('until')),
  }
  const form = /** @type {HTMLFormElement} */ (
    h(
      'form',
      { class: 'filters', role: 'search', 'aria-label': 'Filter deliveries', action: DELIVERIES_PATH, method: 'get', novalidate: true },
      field('endpoint_id', 'Endpoint', controls.endpoint_id),
      field('state', 'State', controls.state),
      field('event_type', 'Event type', controls.event_type),
      field('since', 'Created since', controls.since),
      field('until', 'Created before', controls.until),
      h('div', { class: 'filter-buttons' }, h('button', { type: 'submit', class: 'button' }, 'Filter'), h('a', { class: 'button secondary', href: DELIVERIES_PATH }, 'Clear')),
    )
  )
  form.addEventListener('submit', (ev) => {
    ev.preventDefault()
    const next = filterQuery(form, controls)
    if (next) navigate(`${DELIVERIES_PATH}${next.size ? `?${next}` : ''}`)
  })
  return { form, controls }
}

/**
 * The query the form asks for, times as the API's ISO; null (and the field at fault marked)
 * when a time is unreadable or the range is empty.
 * @param {HTMLFormElement} form @param {FilterControls} controls
 */
function filterQuery(form, controls) {
  clearFieldErrors(form)
  const next = new URLSearchParams()
  for (const name of LOG_FILTERS) {
    const control = controls[name]
    const raw = control.value.trim()
    if (!raw) continue
    const kept = control.dataset['iso']
    const value = name !== 'since' && name !== 'until' ? raw : kept && isoToLocalInput(kept) === raw ? kept : localInputToIso(raw)
    if (value === null) return refuse(controls[name], 'Pick a date and time.')
    next.set(name, value)
  }
  const since = next.get('since')
  const until = next.get('until')
  if (since && until && Date.parse(until) <= Date.parse(since)) return refuse(controls.until, 'Pick a time after “Created since”.')
  return next
}

/** @param {HTMLElement} control @param {string} message @returns {null} */
function refuse(control, message) {
  showFieldError(control, message)
  control.focus()
  return null
}
