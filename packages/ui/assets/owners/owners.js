// Operator → Owners: every owner with its limits, suspension and usage (owners.list), a form per
// owner to set its limits (owners.set_limits: an empty box clears that limit) and suspend /
// resume (owners.suspend|resume). All operator operations: signed in with an admin token the page
// says so and shows nothing else (an owner token never sees another owner).
import { api } from '../api.js'
import {
  clearFieldErrors,
  confirmDialog,
  fill,
  h,
  labelled,
  pageHeading,
  plural,
  problemAlert,
  scrollable,
  showFieldError,
  successNotice,
  tableHead,
  time,
  uid,
} from '../ui.js'

export const OWNERS_PATH = '/ui/operator/owners'

const COLUMNS = ['Owner', 'Status', 'Limits', 'Endpoints', 'Backlog', 'Last 24 h', '']

const ownerPath = (id, suffix = '') => `/api/operator/owners/${encodeURIComponent(id)}${suffix}`

/** The limits an operator sets, as the form names them (owners.set_limits' fields). */
const LIMITS = [
  { name: 'publish_per_second', label: 'Publishes per second', step: 'any', hint: 'Over it, a publish answers 429 with Retry-After.' },
  { name: 'publish_burst', label: 'Publish burst', step: '1', hint: 'Publishes admitted at once (default: the rate, at least 1).' },
  { name: 'max_endpoints', label: 'Max endpoints', step: '1', hint: 'Creating one more is refused.' },
  { name: 'max_in_flight', label: 'Max in flight', step: '1', hint: 'Deliveries of this owner sent at once, across workers.' },
  { name: 'weight', label: 'Weight', step: '1', hint: 'Its share of the workers against other owners (default 1).' },
]

function limitsCell(o) {
  const words = []
  if (o.publish_per_second !== null) words.push(`${o.publish_per_second}/s publish${o.publish_burst !== null ? ` (burst ${o.publish_burst})` : ''}`)
  if (o.max_endpoints !== null) words.push(`≤ ${plural(o.max_endpoints, 'endpoint')}`)
  if (o.max_in_flight !== null) words.push(`≤ ${o.max_in_flight} in flight`)
  if (o.weight !== 1) words.push(`weight ${o.weight}`)
  return words.length ? words.join(', ') : h('span', { class: 'muted' }, 'none (weight 1)')
}

function statusCell(o) {
  if (!o.suspended) return h('span', { class: 'badge badge-enabled' }, 'active')
  return h(
    'span',
    {},
    h('span', { class: 'badge badge-disabled', title: o.suspended.reason ?? '' }, 'suspended'),
    ' since ',
    time(o.suspended.at, { short: true }),
  )
}

/** One labelled number box of the limits form, holding the owner's current value. */
function limitField(limit, value) {
  const control = h('input', {
    id: uid(`owner-${limit.name}`), name: limit.name, type: 'number', min: limit.name === 'max_endpoints' ? 0 : 1,
    step: limit.step, inputmode: limit.step === 'any' ? 'decimal' : 'numeric', value: value ?? '', autocomplete: 'off',
  })
  const hintId = `${control.id}-hint`
  control.setAttribute('aria-describedby', hintId)
  return { control, el: h('div', { class: 'field' }, h('label', { for: control.id }, limit.label), h('p', { class: 'hint', id: hintId }, limit.hint), control) }
}

/** The limits form of one owner: only the boxes that changed are sent; an emptied box clears its limit. */
function limitsForm(o, onChanged) {
  const fields = LIMITS.map((l) => ({ limit: l, ...limitField(l, l.name === 'weight' && o.weight === 1 ? null : o[l.name]) }))
  const status = h('div', { role: 'status' })
  const submit = h('button', { type: 'submit', class: 'button' }, 'Save limits')
  const form = h('form', { class: 'card', novalidate: true }, h('h3', {}, `Limits of ${o.id}`), fields.map((f) => f.el), status, h('div', { class: 'button-row' }, submit))
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    clearFieldErrors(form)
    fill(status)
    /** @type {Record<string, number | null>} */
    const body = {}
    for (const f of fields) {
      const text = f.control.value.trim()
      const value = text === '' ? null : Number(text)
      if (value !== null && !Number.isFinite(value)) return showFieldError(f.control, 'A number, or empty for no limit.')
      const current = f.limit.name === 'weight' && o.weight === 1 ? null : o[f.limit.name]
      if (value !== current) body[f.limit.name] = value
    }
    if (Object.keys(body).length === 0) return fill(status, h('p', { class: 'muted' }, 'Nothing changed.'))
    submit.disabled = true
    try {
      await api('PUT', ownerPath(o.id, '/limits'), { body })
      fill(status, successNotice('Limits saved.'))
      await onChanged()
    } catch (err) {
      const f = err?.field ? fields.find((x) => x.limit.name === err.field.split('.')[0]) : null
      if (f) showFieldError(f.control, err.detail ?? err.title)
      else fill(status, problemAlert(err, 'Not saved.'))
    } finally {
      submit.disabled = false
    }
  })
  return form
}

function suspendButton(o, onChanged, status) {
  const suspended = Boolean(o.suspended)
  return h(
    'button',
    {
      type: 'button',
      class: suspended ? 'button secondary small' : 'button danger small',
      onclick: async () => {
        const sure = await confirmDialog(
          suspended
            ? { title: `Resume ${o.id}?`, body: 'It publishes again, and its waiting deliveries go.', confirmLabel: 'Resume' }
            : { title: `Suspend ${o.id}?`, body: 'Its publishes are refused (403 owner_suspended) and its deliveries wait until it is resumed. Nothing is lost.', confirmLabel: 'Suspend', danger: true },
        )
        if (!sure) return
        try {
          await api('POST', ownerPath(o.id, suspended ? '/resume' : '/suspend'), { body: {} })
          await onChanged()
        } catch (err) {
          fill(status, problemAlert(err, suspended ? 'Not resumed.' : 'Not suspended.'))
        }
      },
    },
    suspended ? 'Resume' : 'Suspend',
  )
}

/** A usage count the list stopped counting at (`usage.at_least`) reads "1000+ deliveries". */
function atLeast(owner, count, text) {
  return (owner.usage.at_least ?? []).includes(count) ? text.replace(/^(\d+)/, '$1+') : text
}

function ownersTable(owners, onChanged, status) {
  const rows = owners.map((o) =>
    labelled(
      COLUMNS,
      h(
        'tr',
        {},
        h('td', {}, h('code', {}, o.id)),
        h('td', {}, statusCell(o)),
        h('td', {}, limitsCell(o)),
        h('td', {}, String(o.usage.endpoints)),
        h('td', {}, atLeast(o, 'backlog', String(o.usage.backlog))),
        h('td', {}, `${atLeast(o, 'deliveries_24h', plural(o.usage.deliveries_24h, 'delivery', 'deliveries'))}, ${atLeast(o, 'attempts_24h', plural(o.usage.attempts_24h, 'attempt'))}`),
        h('td', {}, suspendButton(o, onChanged, status), ' ', h('details', {}, h('summary', {}, 'Limits'), limitsForm(o, onChanged))),
      ),
    ),
  )
  return scrollable(h('table', { class: 'table stack' }, tableHead(COLUMNS, 'Actions'), h('tbody', {}, rows)))
}

/** Owners a page asks for (owners.list's most). */
const OWNERS_PAGE = 200

export async function ownersPage({ main, signal }) {
  document.title = 'Owners · hookledger admin'
  const status = h('div', { role: 'status' })
  const listing = h('div')
  // The first page again after a change; "More owners" adds the next one under those shown.
  const load = async () => {
    const owners = []
    const show = async (cursor) => {
      const page = await api('GET', '/api/operator/owners', { query: { limit: OWNERS_PAGE, cursor }, signal })
      owners.push(...page.data)
      const more = page.next_cursor
        ? h('button', {
            type: 'button',
            class: 'button secondary',
            onclick: () => show(page.next_cursor).catch((err) => signal.aborted || fill(status, problemAlert(err, 'More owners could not be read.'))),
          }, 'More owners')
        : null
      fill(
        listing,
        h('p', { class: 'muted' }, `${plural(owners.length, 'owner')}${more ? ' so far' : ''}: limits, suspension and usage.`),
        ownersTable(owners, load, status),
        more,
      )
    }
    try {
      await show(undefined)
    } catch (err) {
      if (signal.aborted) throw err
      if (err?.status === 403) fill(listing, h('p', {}, 'Owners is an operator page: sign in with an operator token (hookledger token create --scopes operator).'))
      else fill(listing, problemAlert(err, 'The owners could not be read.'))
    }
  }
  await load()
  fill(main, pageHeading('Owners'), status, listing)
}
