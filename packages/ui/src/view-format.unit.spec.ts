import { describe, expect, it } from 'vitest'

/** The browser module under test, loaded as the browser loads it (no build step; plain JS). */
interface ViewFormat {
  snoozeWaitMs(a: { started_at: string; response: { headers: Record<string, string> } | null }): number | null
  humanDuration(ms: number): string
  isoToLocalInput(iso: string | null | undefined): string
  localInputToIso(value: string): string | null
  endpointName(e: { url: string; description: string }): string
  snoozeSummary(d: { snoozes: number; snoozed_ms: number }): string | null
}
const f = (await import(new URL('../assets/view-format.js', import.meta.url).href)) as ViewFormat

const started = '2025-03-04T10:00:00.000Z'
type Answered = { started_at: string; response: { headers: Record<string, string> } | null }
const answered = (retryAfter?: string): Answered => ({
  started_at: started,
  response: { headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter } },
})

describe('snoozeWaitMs: the wait a Retry-After snooze took, as the service bounded it', () => {
  it.each([
    ['delta seconds', answered('7'), 7_000],
    ['padded', answered(' 30 '), 30_000],
    ['0 takes the 2 s floor', answered('0'), 2_000],
    ['negative takes the floor', answered('-5'), 2_000],
    ['garbage is read as now: the floor', answered('soon'), 2_000],
    ['above the 1 h cap', answered('86400'), 3_600_000],
    ['an HTTP-date, from the start', answered('Tue, 04 Mar 2025 10:01:30 GMT'), 90_000],
    ['an HTTP-date in the past', answered('Tue, 04 Mar 2025 09:00:00 GMT'), 2_000],
    ['no header kept', answered(), null],
    ['no answer at all', { started_at: started, response: null } as Answered, null],
  ])('%s', (_, attempt, expected) => {
    expect(f.snoozeWaitMs(attempt)).toBe(expected)
  })
})

describe('humanDuration', () => {
  it.each([
    [2_000, '2 s'],
    [59_400, '59 s'],
    [60_000, '1 min'],
    [90_000, '1 min 30 s'],
    [3_600_000, '1 h'],
    [7_500_000, '2 h 5 min'],
  ])('%i ms → %s', (ms, text) => {
    expect(f.humanDuration(ms)).toBe(text)
  })
})

describe('datetime-local ⇄ ISO, in the reader’s time zone', () => {
  it.each([
    ['2025-03-04T10:15', new Date(2025, 2, 4, 10, 15).toISOString()],
    ['2025-03-04T10:15:30', new Date(2025, 2, 4, 10, 15, 30).toISOString()],
    ['2025-03-04', new Date(2025, 2, 4).toISOString()],
    ['2025-02-31T10:00', null],
    ['2025-13-01T10:00', null],
    ['', null],
    ['yesterday', null],
  ])('%j → %j', (input, iso) => {
    expect(f.localInputToIso(input)).toBe(iso)
  })

  it('round-trips to the minute, and leaves nothing for none or garbage', () => {
    const iso = new Date(2025, 2, 4, 10, 15).toISOString()
    expect(f.isoToLocalInput(iso)).toBe('2025-03-04T10:15')
    expect(f.localInputToIso(f.isoToLocalInput(iso))).toBe(iso)
    expect(f.isoToLocalInput(null)).toBe('')
    expect(f.isoToLocalInput('not a time')).toBe('')
  })
})

describe('names and summaries', () => {
  it.each([
    [{ url: 'https://a.example/hook', description: 'Billing' }, 'Billing'],
    [{ url: 'https://a.example/hook', description: '  ' }, 'https://a.example/hook'],
    [{ url: 'https://a.example/hook', description: '' }, 'https://a.example/hook'],
  ])('endpointName(%j) = %s', (endpoint, name) => {
    expect(f.endpointName(endpoint)).toBe(name)
  })

  it.each([
    [{ snoozes: 0, snoozed_ms: 0 }, null],
    [{ snoozes: 1, snoozed_ms: 7_000 }, '1 snooze (7 s)'],
    [{ snoozes: 3, snoozed_ms: 95_000 }, '3 snoozes (1 min 35 s)'],
  ])('snoozeSummary(%j) = %j', (delivery, text) => {
    expect(f.snoozeSummary(delivery)).toBe(text)
  })
})
