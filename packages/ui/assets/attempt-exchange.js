// @ts-check
// One attempt's request and response, as the API rebuilds them: headers as a table, the body
// in a scrollable pre. Nothing here is parsed as HTML.
import { h } from './ui.js'

/**
 * @param {Record<string, string>} headers
 * @param {string} caption
 */
function headerTable(headers, caption) {
  const names = Object.keys(headers)
  if (names.length === 0) return h('p', { class: 'muted' }, 'No headers kept.')
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'table headers' },
      h('caption', { class: 'visually-hidden' }, caption),
      // Rows straight under the table (no tbody): they are not the attempt table's rows.
      names.map((n) => h('tr', {}, h('th', { scope: 'row' }, h('code', {}, n)), h('td', {}, h('code', {}, headers[n])))),
    ),
  )
}

/** @param {string | null} body @param {string} empty */
const bodyBlock = (body, empty) =>
  body === null || body === '' ? h('p', { class: 'muted' }, empty) : h('pre', { class: 'body', tabindex: '0' }, body)

/**
 * @param {{ attempt: number, outcome: string, error: string | null,
 *   request: { url: string, headers: Record<string, string>, body: string | null },
 *   response: { status_code: number, headers: Record<string, string>, body: string, truncated: boolean } | null }} a
 */
export function attemptExchange(a) {
  // A snooze spends no attempt: it is named by the attempt it postponed.
  const name = a.outcome === 'snoozed' ? `the snooze before attempt ${a.attempt + 1}` : `attempt ${a.attempt}`
  return h(
    'details',
    { class: 'exchange' },
    h('summary', {}, `Request and response of ${name}`),
    h(
      'div',
      { class: 'exchange-grid' },
      h(
        'section',
        { 'aria-label': `Request of ${name}` },
        h('h3', {}, 'Request'),
        h('p', {}, h('code', {}, `POST ${a.request.url}`)),
        headerTable(a.request.headers, `Request headers of ${name}`),
        bodyBlock(a.request.body, 'The event was pruned: its body is gone.'),
      ),
      h(
        'section',
        { 'aria-label': `Response of ${name}` },
        h('h3', {}, 'Response'),
        a.response === null
          ? h('p', {}, 'No answer: ', h('code', {}, a.error ?? 'unknown'))
          : [
              h('p', {}, h('strong', {}, `HTTP ${a.response.status_code}`)),
              headerTable(a.response.headers, `Response headers of ${name}`),
              bodyBlock(a.response.body, 'Empty body.'),
              a.response.truncated ? h('p', { class: 'muted small' }, 'Only the first 4 KiB is kept.') : null,
            ],
      ),
    ),
  )
}
