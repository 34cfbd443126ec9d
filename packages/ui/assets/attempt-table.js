// @ts-check
// One run's attempts as a table. A Retry-After snooze is not an attempt (it spends none): its
// row says "snooze" where the number would be, and how long the receiver asked it to wait.
import { h, labelled, orDash, tableHead, time } from './ui.js'
import { humanDuration, snoozeWaitMs } from './view-format.js'

const COLUMNS = ['Attempt', 'Started', 'Duration', 'Status', 'Error', 'Outcome', 'Signed with']

/** @param {number} run @param {any[]} attempts */
export function attemptTable(run, attempts) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'table stack attempt-table' },
      h('caption', { class: 'visually-hidden' }, `Attempts of run ${run}`),
      tableHead(COLUMNS),
      h('tbody', {}, attempts.map(attemptRow)),
    ),
  )
}

/** @param {any} a */
function attemptRow(a) {
  const snooze = a.outcome === 'snoozed'
  return labelled(
    COLUMNS,
    h(
      'tr',
      { 'data-outcome': a.outcome },
      h('td', { class: 'num' }, ...attemptNumber(a)),
      h('td', { class: 'nowrap' }, time(a.started_at)),
      h('td', { class: 'num nowrap' }, `${a.duration_ms} ms`),
      h('td', { class: 'num' }, orDash(a.status_code)),
      h('td', { class: 'error-cell' }, orDash(a.error)),
      h('td', {}, h('span', { class: `outcome outcome-${a.outcome}` }, snooze ? 'snoozed' : a.outcome), snooze ? snoozeWait(a) : null),
      h(
        'td',
        {},
        a.signed_with.length
          ? h('ul', { class: 'chips' }, a.signed_with.map((/** @type {string} */ k) => h('li', {}, h('code', {}, k))))
          : orDash(null),
      ),
    ),
  )
}

/** The attempt's number; a snooze has none of its own, and another uncounted one says so. @param {any} a */
function attemptNumber(a) {
  if (a.outcome === 'snoozed') return [h('span', { class: 'snooze-mark' }, 'snooze'), h('span', { class: 'muted small block' }, 'no attempt spent')]
  return [String(a.attempt), a.counted ? null : h('span', { class: 'muted small block' }, 'not counted')]
}

/** How long the snooze postponed the next try, from the receiver's Retry-After. @param {any} a */
function snoozeWait(a) {
  const ms = snoozeWaitMs(a)
  return h('span', { class: 'muted small block snooze-wait' }, ms === null ? 'Retry-After: wait not kept' : `waits ${humanDuration(ms)} (Retry-After)`)
}
