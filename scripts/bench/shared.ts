/**
 * Figures and data one scenario leaves for later ones in the same run: the ceiling (every
 * drain divides by it), the drain's database (footprint, replay and seal read it) and the
 * chain-off / chain-on drain rates (drain-off compares them).
 */
import type { BenchDb } from './harness.js'

export const shared: {
  ceilingPerSec?: number
  drain?: BenchDb
  drainPerSec?: number
  /** The drain's deliveries over fan-out + drain time: the same work `serve-drain` times. */
  drainWithFanoutPerSec?: number
  sealedPerSec?: number
  /** The same with the sealer at its default interval, as `serve` runs it. */
  sealedWithFanoutPerSec?: number
  /** `latency`'s p99 (50 owners), which `latency-owners` divides by. */
  latencyP99Ms?: number
} = {}
