/**
 * What people would rather look at than read: the bench's figures as small, self-contained SVG
 * files (no script, no external font or stylesheet, so they render on GitHub and in any
 * browser) — drain over time, the publish → arrival latency distribution, and where one
 * delivery's cost goes. Pure: data in, SVG text out; the harness writes the files.
 */

const W = 640
const H = 300
const PAD = { left: 56, right: 16, top: 58, bottom: 44 }
const INK = '#1f2933'
const GRID = '#d9dee3'
const ACCENT = '#2563eb'
const PARTS = ['#2563eb', '#f59e0b', '#10b981', '#8b5cf6', '#ef4444']

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const num = (n: number) => (Math.abs(n) >= 1000 ? Math.round(n).toLocaleString('en') : String(Math.round(n * 10) / 10))

/** The title, then the subtitle: its part after ' — ' (the run it comes from) on a line of its own. */
function frame(title: string, subtitle: string, body: string): string {
  const [what, when = ''] = subtitle.split(' — ')
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, sans-serif" font-size="12" role="img" aria-label="${esc(title)}">` +
    `<rect width="${W}" height="${H}" fill="#ffffff"/>` +
    `<text x="${PAD.left}" y="18" font-size="14" font-weight="600" fill="${INK}">${esc(title)}</text>` +
    `<text x="${PAD.left}" y="33" fill="#52606d">${esc(what!)}</text>` +
    `<text x="${PAD.left}" y="47" fill="#7b8794" font-size="11">${esc(when)}</text>` +
    body +
    `</svg>\n`
  )
}

/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1
  const p = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= max)!
}

/** Horizontal grid lines and their labels for a y axis from 0 to `top`. */
function yAxis(top: number, unit: string): string {
  const plotH = H - PAD.top - PAD.bottom
  let out = ''
  for (let i = 0; i <= 4; i++) {
    const y = PAD.top + plotH - (plotH * i) / 4
    out += `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y}" y2="${y}" stroke="${GRID}"/>`
    out += `<text x="${PAD.left - 6}" y="${y + 4}" text-anchor="end" fill="#52606d">${num((top * i) / 4)}</text>`
  }
  out += `<text x="14" y="${PAD.top + plotH / 2}" transform="rotate(-90 14 ${PAD.top + plotH / 2})" text-anchor="middle" fill="#52606d">${esc(unit)}</text>`
  return out
}

/** A line over time: `points` are [seconds, value]. */
export function lineChart(opts: { title: string; subtitle: string; points: readonly (readonly [number, number])[]; yUnit: string; xUnit: string }): string {
  const { points } = opts
  const xMax = Math.max(1e-9, ...points.map((p) => p[0]))
  const top = niceMax(Math.max(0, ...points.map((p) => p[1])))
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const x = (v: number) => PAD.left + (plotW * v) / xMax
  const y = (v: number) => PAD.top + plotH - (plotH * v) / top
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join('')
  let ticks = ''
  for (let i = 0; i <= 4; i++) {
    const v = (xMax * i) / 4
    ticks += `<text x="${x(v)}" y="${H - PAD.bottom + 16}" text-anchor="middle" fill="#52606d">${num(v)}</text>`
  }
  const body =
    yAxis(top, opts.yUnit) +
    ticks +
    `<text x="${PAD.left + plotW / 2}" y="${H - 8}" text-anchor="middle" fill="#52606d">${esc(opts.xUnit)}</text>` +
    (points.length > 0 ? `<path d="${path}" fill="none" stroke="${ACCENT}" stroke-width="2"/>` : '')
  return frame(opts.title, opts.subtitle, body)
}

/** Counts of `values` in `buckets` equal bins from 0 to the `clipAt` quantile (the tail's count is said). */
export function histogramBins(values: readonly number[], buckets: number, clipAt = 0.99): { width: number; counts: number[]; beyond: number } {
  const sorted = [...values].sort((a, b) => a - b)
  const edge = sorted.length === 0 ? 1 : Math.max(1e-9, sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * clipAt))]!)
  const width = edge / buckets
  const counts = Array<number>(buckets).fill(0)
  let beyond = 0
  for (const v of sorted) {
    const i = Math.floor(v / width)
    if (i >= buckets) beyond++
    else counts[Math.max(0, i)]!++
  }
  return { width, counts, beyond }
}

/** Bars of a distribution, with markers at named quantiles. */
export function histogram(opts: { title: string; subtitle: string; bins: ReturnType<typeof histogramBins>; xUnit: string; markers: Record<string, number> }): string {
  const { counts, width, beyond } = opts.bins
  const top = niceMax(Math.max(0, ...counts))
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const barW = plotW / Math.max(1, counts.length)
  const xOf = (v: number) => PAD.left + (v / (width * counts.length)) * plotW
  let bars = ''
  counts.forEach((c, i) => {
    const h = (plotH * c) / top
    bars += `<rect x="${(PAD.left + i * barW + 0.5).toFixed(1)}" y="${(PAD.top + plotH - h).toFixed(1)}" width="${Math.max(0.5, barW - 1).toFixed(1)}" height="${h.toFixed(1)}" fill="${ACCENT}"/>`
  })
  let marks = ''
  for (const [name, v] of Object.entries(opts.markers)) {
    if (v > width * counts.length) continue
    marks += `<line x1="${xOf(v)}" x2="${xOf(v)}" y1="${PAD.top}" y2="${PAD.top + plotH}" stroke="${INK}" stroke-dasharray="4 3"/>`
    marks += `<text x="${xOf(v) + 4}" y="${PAD.top + 12}" fill="${INK}">${esc(`${name} ${num(v)}`)}</text>`
  }
  let ticks = ''
  for (let i = 0; i <= 4; i++) {
    const v = (width * counts.length * i) / 4
    ticks += `<text x="${xOf(v)}" y="${H - PAD.bottom + 16}" text-anchor="middle" fill="#52606d">${num(v)}</text>`
  }
  const tail = beyond > 0 ? ` (${beyond} beyond the axis)` : ''
  const body =
    yAxis(top, 'events') + bars + marks + ticks +
    `<text x="${PAD.left + plotW / 2}" y="${H - 8}" text-anchor="middle" fill="#52606d">${esc(opts.xUnit + tail)}</text>`
  return frame(opts.title, opts.subtitle, body)
}

/** One stacked bar per row (e.g. µs of CPU per delivery by process), with a legend. */
export function stackedBars(opts: { title: string; subtitle: string; unit: string; rows: readonly { label: string; parts: Readonly<Record<string, number>> }[] }): string {
  const names = [...new Set(opts.rows.flatMap((r) => Object.keys(r.parts)))]
  const top = niceMax(Math.max(0, ...opts.rows.map((r) => Object.values(r.parts).reduce((a, b) => a + b, 0))))
  const left = 150
  // Room on the right for the total beside the longest bar.
  const plotW = W - left - PAD.right - 80
  const rowH = Math.min(44, (H - PAD.top - PAD.bottom - 24) / Math.max(1, opts.rows.length))
  let body = ''
  opts.rows.forEach((r, i) => {
    const y = PAD.top + 8 + i * rowH
    body += `<text x="${left - 8}" y="${y + rowH / 2 + 4}" text-anchor="end" fill="${INK}">${esc(r.label)}</text>`
    let x = left
    let total = 0
    names.forEach((n, k) => {
      const v = r.parts[n] ?? 0
      const w = (plotW * v) / top
      body += `<rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${(rowH - 10).toFixed(1)}" fill="${PARTS[k % PARTS.length]}"><title>${esc(`${n}: ${num(v)} ${opts.unit}`)}</title></rect>`
      x += w
      total += v
    })
    body += `<text x="${(x + 6).toFixed(1)}" y="${y + rowH / 2 + 2}" fill="${INK}">${esc(`${num(total)} ${opts.unit}`)}</text>`
  })
  let lx = left
  const ly = PAD.top + 8 + opts.rows.length * rowH + 8
  names.forEach((n, k) => {
    body += `<rect x="${lx}" y="${ly}" width="10" height="10" fill="${PARTS[k % PARTS.length]}"/><text x="${lx + 14}" y="${ly + 9}" fill="${INK}">${esc(n)}</text>`
    lx += 24 + n.length * 7
  })
  return frame(opts.title, opts.subtitle, body)
}
