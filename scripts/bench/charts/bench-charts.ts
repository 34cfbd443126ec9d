/**
 * The bench's charts from a run's results (charts/svg-charts.ts draws them): written beside the
 * JSON in bench-results/charts/, and with `--charts=DIR` also there (docs/bench, which the README
 * links, is refreshed that way from a full run).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { histogram, lineChart, stackedBars } from './svg-charts.js'

interface Result {
  readonly scenario: string
  readonly metrics?: Record<string, unknown>
}

type Cpu = { main_ms?: number; receiver_ms?: number; postgres_ms?: number }

/** CPU µs per delivery by process, from a scenario's `cpu` and its delivery count. */
const cpuParts = (cpu: Cpu | undefined, deliveries: number): Record<string, number> | null =>
  cpu && deliveries > 0
    ? {
        'service (Node)': ((cpu.main_ms ?? 0) * 1000) / deliveries,
        PostgreSQL: ((cpu.postgres_ms ?? 0) * 1000) / deliveries,
        receiver: ((cpu.receiver_ms ?? 0) * 1000) / deliveries,
      }
    : null

/** The SVG files this run's results can draw, by file name. */
export function benchCharts(results: readonly Result[], when: string): Record<string, string> {
  const of = (name: string) => results.find((r) => r.scenario === name)?.metrics
  const out: Record<string, string> = {}
  const drain = of('drain')
  const timeline = drain?.['timeline_per_sec'] as [number, number][] | undefined
  if (drain && timeline) {
    out['drain.svg'] = lineChart({
      title: `Drain: ${Number(drain['deliveries']).toLocaleString('en')} deliveries to ${drain['endpoints']} endpoints`,
      subtitle: `completed per second (250 ms buckets); mean ${drain['deliveries_per_sec']}/s, ${Number(drain['ratio_to_ceiling']).toFixed(2)} of the HTTP ceiling — ${when}`,
      points: timeline,
      yUnit: 'deliveries/s',
      xUnit: 'seconds since the first claim',
    })
  }
  const latency = of('latency')
  const bins = latency?.['histogram'] as { width: number; counts: number[]; beyond: number } | undefined
  if (latency && bins) {
    out['latency.svg'] = histogram({
      title: `Publish → arrival at ${latency['rate_per_sec']} events/s, ${latency['endpoints']} endpoints`,
      subtitle: `${latency['events']} events; p50 ${latency['p50_ms']} ms, p99 ${latency['p99_ms']} ms, max ${latency['max_ms']} ms — ${when}`,
      bins,
      xUnit: 'ms from publish to arrival at the receiver',
      markers: { p50: Number(latency['p50_ms']), p99: Number(latency['p99_ms']) },
    })
  }
  const rows: { label: string; parts: Record<string, number> }[] = []
  const add = (label: string, cpu: unknown, deliveries: unknown) => {
    const parts = cpuParts(cpu as Cpu | undefined, Number(deliveries ?? 0))
    if (parts) rows.push({ label, parts })
  }
  if (drain) add('drain (bench)', drain['cpu'], drain['deliveries'])
  const peer = of('peer') as { deliveries?: number; hookledger?: { cpu?: Cpu }; graphile_worker?: { cpu?: Cpu } } | undefined
  if (peer) {
    add('hookledger, defaults', peer.hookledger?.cpu, peer.deliveries)
    add('graphile-worker peer', peer.graphile_worker?.cpu, peer.deliveries)
  }
  if (rows.length > 0) {
    out['cost.svg'] = stackedBars({
      title: 'Where one delivery’s CPU goes',
      subtitle: `µs of CPU per delivery, by process, on the same receiver — ${when}`,
      unit: 'µs',
      rows,
    })
  }
  return out
}

/** Writes the charts into each directory; returns the files written. */
export function writeBenchCharts(results: readonly Result[], when: string, dirs: readonly string[]): string[] {
  const charts = benchCharts(results, when)
  const written: string[] = []
  for (const dir of dirs) {
    mkdirSync(dir, { recursive: true })
    for (const [name, svg] of Object.entries(charts)) {
      writeFileSync(path.join(dir, name), svg)
      written.push(path.join(dir, name))
    }
  }
  return written
}
