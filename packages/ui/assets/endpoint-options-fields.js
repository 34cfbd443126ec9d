// @ts-check
// The endpoint form's "Request options" fieldset, shared by "Add endpoint" and "Edit endpoint":
// custom headers (one row each: name, value, secret), which redirects to follow, a rate limit
// and the delivery order. A secret
// header the endpoint holds shows no value (the server never sends it back): left empty, it
// keeps its value (`{ secret: true }`); typed over, it is replaced.
import { h, uid } from './ui.js'

/** The redirect rules, as the select offers them. */
export const FOLLOW_REDIRECTS_LABELS = {
  same_origin: 'Same origin only (default)',
  none: 'None: a redirect fails the delivery',
}

/** The ordering rules, as the select offers them. */
export const ORDERING_LABELS = {
  none: 'Any order (default)',
  strict: 'Strict, by event time',
}

/**
 * The fieldset, filled from `endpoint` when editing. `read()` gives the body fields; `field` is
 * where a problem on `headers…`, `follow_redirects`, `rate_limit…` or `ordering` is shown.
 * @param {any} [endpoint]
 */
export function endpointOptionsFields(endpoint) {
  const rows = h('div', { class: 'header-rows' })
  const held = new Set(endpoint?.secret_headers ?? [])
  const add = h('button', { type: 'button', class: 'button secondary small' }, 'Add header')
  add.addEventListener('click', () => {
    rows.append(headerRow('', '', false, false))
    /** @type {HTMLInputElement | null} */ (rows.lastElementChild?.querySelector('input') ?? null)?.focus()
  })
  for (const [name, value] of Object.entries(endpoint?.headers ?? {})) {
    rows.append(headerRow(name, held.has(name) ? '' : String(value), held.has(name), held.has(name)))
  }
  const redirects = h(
    'select',
    { id: uid('follow-redirects'), name: 'follow_redirects' },
    ...Object.entries(FOLLOW_REDIRECTS_LABELS).map(([value, label]) =>
      h('option', { value, selected: (endpoint?.follow_redirects ?? 'same_origin') === value }, label),
    ),
  )
  const pacing = rateLimitFields(endpoint?.rate_limit ?? null)
  const ordering = h(
    'select',
    { id: uid('ordering'), name: 'ordering' },
    ...Object.entries(ORDERING_LABELS).map(([value, label]) => h('option', { value, selected: (endpoint?.ordering ?? 'none') === value }, label)),
  )
  const field = h(
    'fieldset',
    { class: 'field', id: uid('request-options') },
    h('legend', {}, 'Request options ', h('span', { class: 'muted' }, '(optional)')),
    h('p', { class: 'hint' }, 'Custom headers are sent on every attempt (at most 20). Mark API keys secret: they are stored sealed and never shown again. webhook-*, content-type, host, user-agent, authorization and hop-by-hop headers are refused.'),
    rows,
    h('div', { class: 'button-row' }, add),
    h('div', { class: 'field' }, h('label', { for: redirects.id }, 'Follow redirects'), redirects),
    pacing.field,
    h(
      'div',
      { class: 'field' },
      h('label', { for: ordering.id }, 'Delivery order'),
      ordering,
      h('p', { class: 'hint' }, 'Strict: each delivery waits until every earlier event to this endpoint is delivered or discarded, so a failing one holds back the rest.'),
    ),
  )
  return {
    field,
    /** The body's `headers`, `follow_redirects`, `rate_limit` and `ordering`; header rows without a name are left out. */
    read() {
      /** @type {Record<string, string | { value?: string, secret: boolean }>} */
      const headers = {}
      for (const row of rows.querySelectorAll('.header-row')) {
        const [name, value, secret] = /** @type {HTMLInputElement[]} */ ([...row.querySelectorAll('input')])
        const key = name?.value.trim() ?? ''
        if (!key) continue
        if (secret?.checked) {
          // A held secret left empty keeps its value.
          headers[key] = value?.value === '' && row.getAttribute('data-held') === 'true' ? { secret: true } : { value: value?.value ?? '', secret: true }
        } else headers[key] = value?.value ?? ''
      }
      return { headers, follow_redirects: redirects.value, rate_limit: pacing.read(), ordering: ordering.value }
    },
  }
}

/**
 * The rate limit: off, or requests per second, a burst and whether 429/503 answers lower it.
 * @param {{ per_second: number, burst: number, adaptive: boolean } | null} held
 */
function rateLimitFields(held) {
  const onId = uid('rate-limit-on')
  const on = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id: onId, checked: held !== null }))
  const number = (/** @type {string} */ name, /** @type {string} */ label, /** @type {string} */ value, /** @type {string} */ step) => {
    const id = uid(`rate-limit-${name}`)
    const input = /** @type {HTMLInputElement} */ (h('input', { id, name: `rate_limit.${name}`, type: 'number', min: step, step, inputmode: 'decimal', value }))
    return { input, field: h('div', { class: 'field' }, h('label', { for: id }, label), input) }
  }
  const perSecond = number('per_second', 'Requests per second', String(held?.per_second ?? 10), 'any')
  const burst = number('burst', 'Burst (requests at once after a pause)', String(held?.burst ?? 1), '1')
  const adaptiveId = uid('rate-limit-adaptive')
  const adaptive = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id: adaptiveId, checked: held?.adaptive ?? false }))
  const body = h(
    'div',
    { class: 'auth-body' },
    perSecond.field,
    burst.field,
    h('span', { class: 'check' }, adaptive, h('label', { for: adaptiveId }, 'Adaptive: halve the rate on a 429 or 503 answer, recover it slowly')),
  )
  body.hidden = held === null
  on.addEventListener('change', () => (body.hidden = !on.checked))
  return {
    field: h('div', { class: 'field' }, h('span', { class: 'check' }, on, h('label', { for: onId }, 'Limit the rate of requests to this endpoint')), body),
    read: () => (on.checked ? { per_second: Number(perSecond.input.value), burst: Number(burst.input.value), adaptive: adaptive.checked } : null),
  }
}

/** The details list's rate limit line, or null when it has none. @param {any} endpoint */
export function rateLimitSummary(endpoint) {
  const r = endpoint.rate_limit
  if (!r) return null
  return `${r.per_second}/s, burst ${r.burst}${r.adaptive ? ', adaptive (429/503 lower it)' : ''}`
}

/**
 * One header row. `held`: a secret the endpoint holds, shown empty with a placeholder.
 * @param {string} name @param {string} value @param {boolean} secret @param {boolean} held
 */
function headerRow(name, value, secret, held) {
  const nameInput = h('input', { type: 'text', 'aria-label': 'Header name', placeholder: 'x-api-key', value: name, autocomplete: 'off', spellcheck: 'false' })
  const valueInput = /** @type {HTMLInputElement} */ (
    h('input', { type: secret ? 'password' : 'text', 'aria-label': 'Header value', value, autocomplete: 'off', spellcheck: 'false', placeholder: held ? '•••••••• (unchanged)' : '' })
  )
  const secretId = uid('header-secret')
  const secretBox = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id: secretId, checked: secret }))
  secretBox.addEventListener('change', () => (valueInput.type = secretBox.checked ? 'password' : 'text'))
  const row = h(
    'div',
    { class: 'header-row', 'data-held': held ? 'true' : 'false' },
    nameInput,
    valueInput,
    h('span', { class: 'check' }, secretBox, h('label', { for: secretId }, 'secret')),
    h('button', { type: 'button', class: 'button secondary small', onclick: () => row.remove() }, 'Remove'),
  )
  return row
}

/** A one-line summary of the headers for the details list: names, secret ones marked. @param {any} endpoint */
export function headersSummary(endpoint) {
  const held = new Set(endpoint.secret_headers ?? [])
  const names = Object.keys(endpoint.headers ?? {})
  if (names.length === 0) return null
  return names.map((name, i) => [i > 0 ? ', ' : '', h('code', {}, name), held.has(name) ? ' (secret)' : `: ${endpoint.headers[name]}`])
}
