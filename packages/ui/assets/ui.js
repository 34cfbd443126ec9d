// Small DOM helpers shared by the screens. Text from the server is always inserted as text,
// never parsed as HTML.

/** `h('a', { href, class, onclick }, 'text', child)`: one element, its attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on') && typeof value === 'function')
      el.addEventListener(name.slice(2), value)
    else if (name === 'class') el.className = value
    else el.setAttribute(name, value === true ? '' : String(value))
  }
  return append(el, children)
}

export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue
    el.append(child instanceof Node ? child : String(child))
  }
  return el
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren()
  return append(el, children)
}

let lastId = 0
/** A fresh id for label/aria wiring. */
export const uid = (prefix) => `${prefix}-${++lastId}`

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
const shortDateTime = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
})

/**
 * An ISO timestamp in the reader's locale, the exact value on hover; a dash for none. `short`
 * (for table cells) leaves out the year.
 */
export function time(iso, { short = false } = {}) {
  if (!iso) return h('span', { class: 'muted' }, '—')
  return h(
    'time',
    { datetime: iso, title: iso },
    (short ? shortDateTime : dateTime).format(new Date(iso)),
  )
}

/**
 * Why a delivery waits (`waiting_reason`), its time in the reader's locale rather than the
 * API's ISO; a dash for none.
 */
export function waitingWords(reason) {
  if (!reason) return orDash(null)
  const suffix = reason.until ? `, until ${reason.until}` : null
  if (!suffix || !reason.text.endsWith(suffix)) return reason.text
  return [reason.text.slice(0, -suffix.length), ', until ', time(reason.until, { short: true })]
}

/** A stored reason code (`disabled_by_owner`) as words. */
export const humanize = (code) => code.replaceAll('_', ' ')

/** A table that scrolls sideways on its own instead of widening the page. */
export const scrollable = (table) => h('div', { class: 'table-wrap' }, table)

/**
 * Names each cell of `row` after its column (`data-label`), so a narrow screen can show the
 * row as a card of labelled lines (`.table.stack` in style.css). Returns the row.
 */
export function labelled(columns, row) {
  ;[...row.children].forEach((cell, i) => {
    if (columns[i]) cell.setAttribute('data-label', columns[i])
  })
  return row
}

/** The column heads of a `labelled` table; an empty name is a visually hidden `hidden` one. */
export const tableHead = (columns, hidden = '') =>
  h(
    'thead',
    {},
    h(
      'tr',
      {},
      columns.map((c) =>
        h('th', { scope: 'col' }, c || h('span', { class: 'visually-hidden' }, hidden)),
      ),
    ),
  )

/** One line of text cut with an ellipsis where it does not fit; the whole of it on hover. */
export const truncated = (text, tag = 'span', attrs = {}) =>
  h(tag, { ...attrs, class: `truncate ${attrs.class ?? ''}`.trim(), title: text }, text)

/** A dash for a missing value. */
export const orDash = (value) =>
  value === null || value === undefined || value === ''
    ? h('span', { class: 'muted' }, '—')
    : String(value)

/** A coloured state word (endpoint or delivery state); the word itself carries the meaning. */
export const badge = (state) => h('span', { class: `badge badge-${state}` }, state)

export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** Who a ledger actor is, in words. */
export function describeActor(actor) {
  if (actor === 'system') return 'the system'
  if (actor === 'operator') return 'the operator'
  if (actor.startsWith('owner:')) return `owner token ${actor.slice('owner:'.length)}`
  if (actor.startsWith('worker:')) return `worker ${actor.slice('worker:'.length)}`
  return actor
}

/** A problem as an alert: what went wrong, the field at fault and the stable code. */
export function problemAlert(err, lead) {
  const p = asProblem(err)
  const detail = p.detail ?? p.title
  // Validation details already start with the field (`url: …`); others get it in front.
  const naming = p.field && !detail.startsWith(`${p.field}:`)
  return h(
    'div',
    { class: 'notice notice-error', role: 'alert' },
    h('strong', {}, lead ?? p.title),
    ' ',
    naming ? h('span', {}, h('code', {}, p.field), ': ') : null,
    detail,
    p.code ? h('span', { class: 'muted' }, ` (${p.code})`) : null,
  )
}

/** Anything thrown, as problem fields; a programming error shows a generic line, never a stack. */
export function asProblem(err) {
  if (err && err.name === 'ProblemError') return err
  console.error(err)
  return {
    title: 'Something went wrong',
    detail: 'The page hit an unexpected error. Reload and try again.',
    code: 'client_error',
  }
}

/** A polite success message. */
export const successNotice = (...children) =>
  h('div', { class: 'notice notice-success', role: 'status' }, ...children)

/** Marks a form control invalid and puts the message right under it. */
export function showFieldError(control, message) {
  const id = `${control.id}-error`
  document.getElementById(id)?.remove()
  const error = h('p', { class: 'field-error', id }, message)
  control.setAttribute('aria-invalid', 'true')
  const described = (control.getAttribute('aria-describedby') ?? '')
    .split(' ')
    .filter((x) => x && x !== id)
  control.setAttribute('aria-describedby', [...described, id].join(' '))
  ;(control.closest('.field') ?? control).append(error)
  return error
}

export function clearFieldErrors(form) {
  for (const error of form.querySelectorAll('.field-error')) error.remove()
  for (const control of form.querySelectorAll('[aria-invalid]')) {
    control.removeAttribute('aria-invalid')
    const described = (control.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter((x) => x && !x.endsWith('-error'))
    if (described.length) control.setAttribute('aria-describedby', described.join(' '))
    else control.removeAttribute('aria-describedby')
  }
}

/** A modal question; resolves true only when the user picks the confirming button. */
export function confirmDialog({ title, body, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    const titleId = uid('dialog-title')
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId })
    const cancel = h(
      'button',
      {
        type: 'button',
        class: 'button secondary',
        autofocus: true,
        onclick: () => dialog.close('cancel'),
      },
      'Cancel',
    )
    const confirm = h(
      'button',
      {
        type: 'button',
        class: danger ? 'button danger' : 'button',
        onclick: () => dialog.close('confirm'),
      },
      confirmLabel,
    )
    append(dialog, [
      h('h2', { id: titleId }, title),
      h('p', {}, body),
      h('div', { class: 'button-row end' }, cancel, confirm),
    ])
    dialog.addEventListener('close', () => {
      dialog.remove()
      resolve(dialog.returnValue === 'confirm')
    })
    document.body.append(dialog)
    dialog.showModal()
  })
}

/** A breadcrumb trail; the last item is the current page. */
export function breadcrumbs(...items) {
  return h(
    'nav',
    { class: 'breadcrumbs', 'aria-label': 'Breadcrumb' },
    h(
      'ol',
      {},
      items.map(([label, href], i) =>
        h(
          'li',
          {},
          i === items.length - 1
            ? h('span', { 'aria-current': 'page' }, label)
            : h('a', { href }, label),
        ),
      ),
    ),
  )
}

/** The page heading; the router focuses it after a navigation. */
export const pageHeading = (...children) => h('h1', { tabindex: '-1' }, ...children)

/**
 * One message carried across a navigation, in memory only (the one-time secret must never
 * reach storage or the URL).
 */
let pending = null
export const flash = {
  set(kind, value) {
    pending = { kind, value }
  },
  /** The value if it was left for this kind of page; anything else is dropped. */
  take(kind) {
    const left = pending
    pending = null
    return left?.kind === kind ? left.value : null
  },
}

/** Calls `fn` every `ms` while the page is visible, until `signal` aborts. */
export function every(ms, signal, fn) {
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') fn()
  }, ms)
  signal.addEventListener('abort', () => clearInterval(timer))
}
