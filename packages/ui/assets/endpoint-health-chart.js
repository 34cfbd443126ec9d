// @ts-check
// Endpoint health (`webhooks.stats`) drawn as inline SVG: a stacked bar chart per bucket by
// outcome on the endpoint page, a sparkline per endpoint in the list. No chart library.
import { api, endpointPath } from './api.js'
import { fill, h, problemAlert } from './ui.js'

const SVG_NS = 'http://www.w3.org/2000/svg'

/** Outcomes bottom to top, with a label for people; colours are `.outcome-<name>` in style.css (the CSP admits no inline style). */
export const OUTCOME_STYLES = [
  { outcome: 'completed', label: 'completed' },
  { outcome: 'retry_scheduled', label: 'failed, retry scheduled' },
  { outcome: 'snoozed', label: 'snoozed (Retry-After)' },
  { outcome: 'interrupted', label: 'interrupted' },
  { outcome: 'discarded', label: 'discarded' },
]

/**
 * One SVG element with its attributes and children.
 * @param {string} tag @param {Record<string, string | number>} attrs @param {...(Node | null)} children
 */
function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  for (const c of children) if (c) el.append(c)
  return el
}

/** A `<title>`: the tooltip and the accessible name of an SVG shape. */
const tip = (/** @type {string} */ text) => {
  const t = document.createElementNS(SVG_NS, 'title')
  t.textContent = text
  return t
}

/** `0.973` → `97.3%`; null → `—`. */
export const percent = (/** @type {number | null} */ rate) =>
  rate === null ? '—' : `${(Math.round(rate * 1000) / 10).toString()}%`

/** `1234` → `1.23 s`, `87` → `87 ms`; null → `—`. */
export const millis = (/** @type {number | null} */ ms) =>
  ms === null ? '—' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms} ms`

const bucketLabel = (/** @type {string} */ iso, /** @type {number} */ seconds) =>
  new Intl.DateTimeFormat(undefined, seconds >= 86_400 ? { month: 'short', day: 'numeric' } : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }).format(new Date(iso))

/**
 * The stacked bar chart: one bar per bucket, one segment per outcome; hover or focus a bar for
 * its numbers. The table beside it is the same data for screen readers.
 * @param {any} stats the `webhooks.stats` answer
 */
export function healthChart(stats) {
  const width = 720
  const height = 160
  // No text inside: the viewBox is stretched to the page's width, and text would shrink with it.
  const pad = { top: 4, right: 0, bottom: 1, left: 0 }
  const n = stats.buckets.length
  const max = Math.max(1, ...stats.buckets.map((/** @type {any} */ b) => b.attempts))
  const slot = (width - pad.left - pad.right) / n
  const barW = Math.max(2, slot * 0.75)
  const y = (/** @type {number} */ v) => pad.top + (height - pad.top - pad.bottom) * (1 - v / max)
  const chart = svg('svg', {
    class: 'health-chart',
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-labelledby': 'health-chart-title',
    preserveAspectRatio: 'none',
  })
  chart.append(
    svg('title', { id: 'health-chart-title' }, document.createTextNode(`Attempts per ${stats.bucket_seconds / 3600} h over the last ${stats.window}, by outcome: ${stats.attempts} attempts, ${percent(stats.success_rate)} completed`)),
  )
  chart.append(svg('line', { x1: pad.left, x2: width - pad.right, y1: y(0), y2: y(0), class: 'axis' }))
  stats.buckets.forEach((/** @type {any} */ b, /** @type {number} */ i) => {
    const x = pad.left + i * slot + (slot - barW) / 2
    const parts = OUTCOME_STYLES.filter((o) => b.outcomes[o.outcome] > 0)
    const g = svg('g', { class: 'bar', 'data-bucket': b.start, 'data-attempts': b.attempts })
    g.append(tip(`${bucketLabel(b.start, stats.bucket_seconds)}: ${b.attempts} attempts${b.attempts ? `, ${percent(b.success_rate)} completed — ` + parts.map((o) => `${b.outcomes[o.outcome]} ${o.label}`).join(', ') : ''}`))
    // A transparent full-height hit area, so an empty bucket has a tooltip too.
    g.append(svg('rect', { x: pad.left + i * slot, y: pad.top, width: slot, height: height - pad.top - pad.bottom, class: 'hit' }))
    let base = 0
    for (const o of parts) {
      const v = b.outcomes[o.outcome]
      g.append(svg('rect', { x, y: y(base + v), width: barW, height: y(base) - y(base + v), class: `outcome-${o.outcome}`, 'data-outcome': o.outcome }))
      base += v
    }
    chart.append(g)
  })
  return chart
}

/**
 * The chart with its scale as HTML, which keeps its size at any width: the most attempts in a
 * bucket and 0 beside it, the first, middle and last bucket under it.
 * @param {any} stats the `webhooks.stats` answer
 */
export function chartFrame(stats) {
  const n = stats.buckets.length
  const max = Math.max(1, ...stats.buckets.map((/** @type {any} */ b) => b.attempts))
  const label = (/** @type {number} */ i) => h('span', { class: 'chart-label' }, bucketLabel(stats.buckets[i].start, stats.bucket_seconds))
  return h(
    'div',
    { class: 'chart-wrap' },
    h('div', { class: 'chart-y', 'aria-hidden': 'true' }, h('span', { class: 'chart-label' }, String(max)), h('span', { class: 'chart-label' }, '0')),
    healthChart(stats),
    h('div', { class: 'chart-x', 'aria-hidden': 'true' }, label(0), label(Math.floor(n / 2)), label(n - 1)),
  )
}

/** The legend: the colours of the outcomes with their counts in the window. */
const legend = (/** @type {any} */ stats) =>
  h(
    'ul',
    { class: 'legend' },
    OUTCOME_STYLES.map((o) =>
      h('li', {}, h('span', { class: `swatch outcome-${o.outcome}`, 'aria-hidden': 'true' }), `${o.label}: `, h('span', { class: 'num' }, String(stats.outcomes[o.outcome]))),
    ),
  )

/** Success rate and latency, as figures. */
const figures = (/** @type {any} */ stats) =>
  h(
    'dl',
    { class: 'figures', id: 'health-figures' },
    h('div', {}, h('dt', {}, 'Attempts'), h('dd', { class: 'num', 'data-figure': 'attempts' }, String(stats.attempts))),
    h('div', {}, h('dt', {}, 'Success rate'), h('dd', { class: 'num', 'data-figure': 'success-rate' }, percent(stats.success_rate))),
    h('div', {}, h('dt', {}, 'Latency p50'), h('dd', { class: 'num', 'data-figure': 'p50' }, millis(stats.latency_ms.p50))),
    h('div', {}, h('dt', {}, 'Latency p95'), h('dd', { class: 'num', 'data-figure': 'p95' }, millis(stats.latency_ms.p95))),
  )

/**
 * The endpoint page's health section: a window switch (24 h, 7 days), the figures, the chart.
 * @param {string} id @param {AbortSignal} signal
 */
export function endpointHealthSection(id, signal) {
  const body = h('div', { class: 'health-body' }, h('p', { class: 'muted' }, 'Loading…'))
  const windowSelect = h('select', { id: 'health-window', name: 'window' }, h('option', { value: '24h' }, 'Last 24 hours (hourly)'), h('option', { value: '7d' }, 'Last 7 days (6-hourly)'))
  let shown = ''
  async function load(quiet = false) {
    try {
      const stats = await api('GET', endpointPath(id, '/stats'), { query: { window: windowSelect.value }, signal })
      const key = JSON.stringify({ ...stats, until: undefined })
      if (quiet && key === shown) return
      shown = key
      fill(
        body,
        figures(stats),
        stats.attempts === 0 ? h('p', { class: 'empty' }, `No attempts in the last ${stats.window === '7d' ? '7 days' : '24 hours'}.`) : [chartFrame(stats), legend(stats)],
      )
    } catch (err) {
      if (!signal.aborted) fill(body, problemAlert(err, 'Could not load the endpoint’s health.'))
    }
  }
  windowSelect.addEventListener('change', () => load())
  const section = h(
    'section',
    { 'aria-labelledby': 'health-heading', id: 'endpoint-health' },
    h('div', { class: 'section-head' }, h('h2', { id: 'health-heading' }, 'Health'), h('div', { class: 'toolbar' }, h('label', { for: windowSelect.id }, 'Window'), windowSelect)),
    h('p', { class: 'hint' }, 'Every attempt, by when it was recorded and how it ended; latency is the time to the answer.'),
    body,
  )
  return { section, reload: () => load(), refresh: () => load(true) }
}

/**
 * A sparkline of the last 24 hours for the endpoint list: one thin bar per hour, its height
 * the attempts, red where they did not complete.
 * @param {any} stats
 */
export function healthSparkline(stats) {
  const width = 96
  const height = 24
  const n = stats.buckets.length
  const max = Math.max(1, ...stats.buckets.map((/** @type {any} */ b) => b.attempts))
  const slot = width / n
  const label = stats.attempts === 0 ? 'No attempts in the last 24 hours' : `Last 24 hours: ${stats.attempts} attempts, ${percent(stats.success_rate)} completed, p95 ${millis(stats.latency_ms.p95)}`
  const line = svg('svg', { class: 'sparkline', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': label }, tip(label))
  line.append(svg('line', { x1: 0, x2: width, y1: height - 0.5, y2: height - 0.5, class: 'axis' }))
  stats.buckets.forEach((/** @type {any} */ b, /** @type {number} */ i) => {
    if (b.attempts === 0) return
    const total = (b.attempts / max) * (height - 1)
    const bad = total * (1 - (b.success_rate ?? 0))
    const x = i * slot + slot * 0.15
    const w = slot * 0.7
    line.append(svg('rect', { x, y: height - 1 - total, width: w, height: total - bad, class: 'outcome-completed' }))
    if (bad > 0) line.append(svg('rect', { x, y: height - 1 - bad, width: w, height: bad, class: 'outcome-discarded' }))
  })
  return line
}

/**
 * Fills `cell` with the endpoint's 24-hour sparkline and its success rate.
 * @param {HTMLElement} cell @param {string} id @param {AbortSignal} signal
 */
export async function fillSparkline(cell, id, signal) {
  try {
    const stats = await api('GET', endpointPath(id, '/stats'), { query: { window: '24h' }, signal })
    fill(cell, healthSparkline(stats), h('span', { class: 'muted small spark-rate' }, stats.attempts ? percent(stats.success_rate) : 'no attempts'))
  } catch {
    if (!signal.aborted) fill(cell, h('span', { class: 'muted small' }, 'unavailable'))
  }
}
