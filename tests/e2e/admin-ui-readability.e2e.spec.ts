// The admin UI reads right: the delivery log names each row's endpoint and filters by name,
// type and time; a snooze reads as a snooze; every state badge and outcome label meets WCAG AA
// on what it is drawn on; and no page scrolls sideways at 390 or 1280 px. Screenshots of each
// page at both widths go to bench-results/ (git-ignored).
import { mkdirSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import { adminGet, createEndpoint, launchBrowser, openTab, publish, signedInContext, startStack, type Stack } from './admin-ui-stack.js'
import { charactersPerLine, colouredWords, contrastRatio, overflowReport, readabilityReport } from './admin-ui-measure.js'

const SHOTS = new URL('../../bench-results/ui/', import.meta.url).pathname
mkdirSync(SHOTS, { recursive: true })

const DELIVERY_STATES = ['pending', 'running', 'retryable', 'completed', 'discarded']
const ENDPOINT_STATES = ['enabled', 'failing', 'disabled']
const OUTCOMES = ['completed', 'retry_scheduled', 'snoozed', 'interrupted', 'discarded']
const WIDTHS = [390, 1280] as const

// A URL as long as real ones get: at 390 px it must wrap in words' worth, not 2–3 characters.
const LONG_PATH = '/hooks/billing/v2/tenants/7f3a9c2e-5b1d-4e8a-9f60-2c7d1e4b8a35/events/receive'

interface Delivery { id: string; endpoint_id: string; event_id: string; state: string; attempts: number; snoozes: number }

let stack: Stack
let browser: Browser
const ids = { billing: '', discards: '', snoozes: '', flaky: '' }
/** evt_read_1's delivery per endpoint. */
const deliveryOf: Record<keyof typeof ids, string> = { billing: '', discards: '', snoozes: '', flaky: '' }

/**
 * Four endpoints that answer differently, and two events to each: billing verifies (204),
 * discards answers 400, snoozes asks for Retry-After: 7 once, flaky answers 500.
 */
async function seed(): Promise<void> {
  const billing = await createEndpoint(stack, { url: stack.receiver.url(LONG_PATH), event_types: ['booking.*'], description: 'Billing receiver' })
  stack.verifiers.set(LONG_PATH, new Webhook(billing.secret))
  const discards = await createEndpoint(stack, { url: stack.receiver.url('/discards'), event_types: ['booking.*'] })
  const snoozes = await createEndpoint(stack, { url: stack.receiver.url('/snoozes'), event_types: ['booking.*'], description: 'Rate-limited receiver' })
  const flaky = await createEndpoint(stack, { url: stack.receiver.url('/flaky'), event_types: ['booking.*'] })
  let snoozed = false
  stack.scripted.set('/snoozes', (req) => {
    if (snoozed || !req.body.includes('"evt_read_1"')) return { status: 204 }
    snoozed = true
    return { status: 429, headers: { 'retry-after': '7' } }
  })
  stack.scripted.set('/flaky', () => ({ status: 500, body: 'try again' }))
  Object.assign(ids, { billing: billing.endpoint.id, discards: discards.endpoint.id, snoozes: snoozes.endpoint.id, flaky: flaky.endpoint.id })
  await publish(stack, 'evt_read_1', 'booking.created')
  await publish(stack, 'evt_read_2', 'booking.cancelled')
  const settled = await eventually('each endpoint’s answer to evt_read_1 recorded', async () => {
    const { data } = await adminGet<{ data: Delivery[] }>(stack, '/api/admin/deliveries?event_type=booking.created')
    const on = (id: string) => data.find((d) => d.endpoint_id === id)
    const ready = on(ids.billing)?.state === 'completed' && on(ids.discards)?.state === 'discarded' && (on(ids.snoozes)?.snoozes ?? 0) > 0 && (on(ids.flaky)?.attempts ?? 0) > 0
    return ready && data
  })
  for (const key of Object.keys(ids) as (keyof typeof ids)[]) deliveryOf[key] = settled.find((d) => d.endpoint_id === ids[key])!.id
}

beforeAll(async () => {
  ;[stack, browser] = await Promise.all([startStack(), launchBrowser()])
  await seed()
})

afterAll(async () => {
  await browser?.close()
  await stack?.stop()
})

/** A signed-in tab at `width`, with its script errors. */
async function tab(width: number): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const context = await signedInContext(browser, stack, { width, height: 900 })
  const { page, errors } = await openTab(context)
  return { page, errors, close: () => context.close() }
}

describe('admin UI readability', () => {
  it('names each log row’s endpoint, linked to its page, without sideways scroll at 1280 px', async () => {
    const { page, errors, close } = await tab(1280)
    await page.goto(`${stack.url}/ui/deliveries?event_type=booking.created`)
    const rows = page.locator('tbody tr', { hasText: 'evt_read_1' })
    await rows.nth(3).waitFor()
    expect(await rows.count()).toBe(4)
    const cells = await rows.locator('td.endpoint-cell').evaluateAll((tds) =>
      tds.map((td) => {
        const link = td.querySelector('a')
        return { name: link?.textContent, href: link?.getAttribute('href'), lines: [...td.children].map((c) => c.textContent) }
      }),
    )
    const endpointHref = (id: string) => `/ui/integrations/webhooks/${id}`
    expect(cells).toEqual(
      expect.arrayContaining([
        { name: 'Billing receiver', href: endpointHref(ids.billing), lines: ['Billing receiver', stack.receiver.url(LONG_PATH)] },
        { name: 'Rate-limited receiver', href: endpointHref(ids.snoozes), lines: ['Rate-limited receiver', stack.receiver.url('/snoozes')] },
        { name: stack.receiver.url('/discards'), href: endpointHref(ids.discards), lines: [stack.receiver.url('/discards')] },
        { name: stack.receiver.url('/flaky'), href: endpointHref(ids.flaky), lines: [stack.receiver.url('/flaky')] },
      ]),
    )
    const report = await overflowReport(page)
    expect(report.scrollingTables).toEqual([])
    expect(report.scrollWidth).toBeLessThanOrEqual(report.clientWidth)
    await page.screenshot({ path: `${SHOTS}log-endpoint-column-1280.png`, fullPage: true })

    await rows.filter({ hasText: 'Billing receiver' }).getByRole('link', { name: 'Billing receiver' }).click()
    await page.waitForURL(`**${endpointHref(ids.billing)}`)
    expect(errors).toEqual([])
    await close()
  })

  it('filters the log by endpoint name, state, catalog type and date pickers, sent as the API’s ISO times', async () => {
    const { page, errors, close } = await tab(1280)
    await page.goto(`${stack.url}/ui/deliveries`)
    const filters = page.getByRole('search', { name: 'Filter deliveries' })
    const endpoint = filters.getByLabel('Endpoint')
    await endpoint.locator('option', { hasText: 'Rate-limited receiver' }).waitFor({ state: 'attached' })
    const options = await endpoint.locator('option').allInnerTexts()
    expect(options).toEqual(
      expect.arrayContaining(['Any endpoint', `Billing receiver — ${stack.receiver.url(LONG_PATH)}`, stack.receiver.url('/discards')]),
    )
    // The type filter offers the catalog, not a text box.
    const types = await filters.getByLabel('Event type').locator('option').allInnerTexts()
    expect(types).toEqual(expect.arrayContaining(['Any type', 'booking.created', 'booking.cancelled', 'webhook.test']))

    const local = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    const hourAgo = new Date(Date.now() - 3_600_000)
    const inAnHour = new Date(Date.now() + 3_600_000)
    await endpoint.selectOption({ label: `Billing receiver — ${stack.receiver.url(LONG_PATH)}` })
    await filters.getByLabel('State').selectOption('completed')
    await filters.getByLabel('Event type').selectOption('booking.created')
    await filters.getByLabel('Created since').fill(local(hourAgo))
    await filters.getByLabel('Created before').fill(local(inAnHour))
    await filters.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL(/until=/)
    const query = new URL(page.url()).searchParams
    expect([...query.keys()]).toEqual(['endpoint_id', 'state', 'event_type', 'since', 'until'])
    expect(query.get('endpoint_id')).toBe(ids.billing)
    // Minutes of the reader's local time, as instants.
    expect(query.get('since')).toBe(new Date(Math.floor(hourAgo.getTime() / 60_000) * 60_000).toISOString())
    expect(query.get('until')).toBe(new Date(Math.floor(inAnHour.getTime() / 60_000) * 60_000).toISOString())
    const rows = page.locator('tbody tr')
    await rows.first().waitFor()
    expect(await rows.allInnerTexts()).toEqual([expect.stringContaining('evt_read_1')])
    // The form shows what the query holds after the reload.
    expect(await filters.getByLabel('Created since').inputValue()).toBe(local(hourAgo))
    await page.screenshot({ path: `${SHOTS}log-filters-1280.png`, fullPage: true })

    // An empty range is refused on the field, before any request.
    await filters.getByLabel('Created before').fill(local(new Date(hourAgo.getTime() - 60_000)))
    await filters.getByRole('button', { name: 'Filter' }).click()
    await page.getByText('Pick a time after “Created since”.').waitFor()
    expect(await filters.getByLabel('Created before').getAttribute('aria-invalid')).toBe('true')
    expect(new URL(page.url()).searchParams.get('until')).toBe(query.get('until'))

    // A range before the events finds nothing; "Clear" drops every filter.
    await filters.getByLabel('Created since').fill(local(new Date(hourAgo.getTime() - 3_600_000)))
    await filters.getByRole('button', { name: 'Filter' }).click()
    await page.getByText('No deliveries match.').waitFor()
    await filters.getByRole('link', { name: 'Clear' }).click()
    await page.waitForURL(/\/ui\/deliveries$/)
    await page.locator('tbody tr', { hasText: 'evt_read_2' }).first().waitFor()
    expect(errors).toEqual([])
    await close()
  })

  it('shows a Retry-After snooze as a snooze with its wait, not as attempt 0', async () => {
    const { page, errors, close } = await tab(1280)
    await page.goto(`${stack.url}/ui/deliveries/${deliveryOf.snoozes}`)
    const snooze = page.locator('section.run tbody tr[data-outcome=snoozed]')
    await snooze.waitFor()
    const [attempt, , , status, , outcome] = await snooze.locator('td').allInnerTexts()
    expect(attempt).toBe('snooze\nno attempt spent')
    expect(status).toBe('429')
    expect(outcome).toBe('snoozed\nwaits 7 s (Retry-After)')
    await page.locator('dl.details').getByText(/1 snooze \(7 s\)/).waitFor()
    await page.getByText('Request and response of the snooze before attempt 1').waitFor()
    await page.screenshot({ path: `${SHOTS}snooze-1280.png`, fullPage: true })
    // The log says it too, beside the attempts.
    await page.goto(`${stack.url}/ui/deliveries?endpoint_id=${ids.snoozes}&event_type=booking.created`)
    await page.locator('tbody tr td[data-label=Attempts]', { hasText: '1 snooze (7 s)' }).waitFor()
    expect(errors).toEqual([])
    await close()
  })

  for (const width of WIDTHS) {
    it(`draws every state badge and outcome label at WCAG AA (≥ 4.5:1) on its real background, ${width} px`, async () => {
      const { page, errors, close } = await tab(width)
      const where = [
        { path: '/ui/deliveries', ready: 'tbody tr .badge-completed', samples: { badge: DELIVERY_STATES, outcome: [] } },
        { path: '/ui/integrations/webhooks', ready: 'tbody tr .badge-enabled', samples: { badge: ENDPOINT_STATES, outcome: [] } },
        ...(['snoozes', 'discards', 'flaky', 'billing'] as const).map((k) => ({
          path: `/ui/deliveries/${deliveryOf[k]}`,
          ready: 'section.run tbody .outcome',
          samples: { badge: DELIVERY_STATES, outcome: OUTCOMES },
        })),
      ]
      const measured: { label: string; ratio: number }[] = []
      for (const { path, ready, samples } of where) {
        await page.goto(`${stack.url}${path}`)
        await page.locator(ready).first().waitFor()
        for (const swatch of await colouredWords(page, samples)) measured.push({ label: `${path} ${swatch.label}`, ratio: contrastRatio(swatch) })
      }
      const seen = new Set(measured.map((m) => /(badge|outcome)-(\w+)/.exec(m.label)?.[0]))
      for (const s of [...DELIVERY_STATES, ...ENDPOINT_STATES]) expect(seen).toContain(`badge-${s}`)
      for (const o of OUTCOMES) expect(seen).toContain(`outcome-${o}`)
      expect(measured.filter((m) => m.ratio < 4.5)).toEqual([])
      expect(errors).toEqual([])
      await close()
    })
  }

  /** Every screen, and what shows it is fully drawn. */
  const screens = () => [
    { name: 'webhooks', path: '/ui/integrations/webhooks', ready: '[data-health-of] svg.sparkline' },
    { name: 'endpoint-new', path: '/ui/integrations/webhooks/new', ready: 'input[value="booking.created"]' },
    { name: 'endpoint', path: `/ui/integrations/webhooks/${ids.billing}`, ready: '#endpoint-health .chart-label' },
    { name: 'endpoint-failing', path: `/ui/integrations/webhooks/${ids.flaky}`, ready: 'section[aria-labelledby=log-heading] tbody tr' },
    { name: 'delivery-log', path: '/ui/deliveries', ready: 'tbody tr .endpoint-cell a' },
    { name: 'delivery', path: `/ui/deliveries/${deliveryOf.snoozes}`, ready: 'section.run tbody tr' },
    { name: 'explain', path: '/ui/events/evt_read_1/explain', ready: 'tbody tr[data-verdict]' },
    { name: 'not-found', path: '/ui/no-such-page', ready: 'h1' },
  ]

  for (const width of WIDTHS) {
    it(`fits every page in ${width} px: no sideways scroll, tables inside, readable text, selects in their cards`, async () => {
      const { page, errors, close } = await tab(width)
      const problems: Record<string, unknown> = {}
      for (const { name, path, ready } of screens()) {
        await page.goto(`${stack.url}${path}`)
        await page.locator(ready).first().waitFor()
        const overflow = await overflowReport(page)
        const read = await readabilityReport(page)
        const found = {
          ...(overflow.scrollWidth > overflow.clientWidth ? { scrollWidth: overflow.scrollWidth, offenders: overflow.offenders } : {}),
          ...(overflow.scrollingTables.length ? { scrollingTables: overflow.scrollingTables } : {}),
          ...(read.smallText.length ? { smallText: read.smallText } : {}),
          ...(read.svgText ? { svgText: read.svgText } : {}),
          ...(read.selectsOutside.length ? { selectsOutside: read.selectsOutside } : {}),
          ...(read.truncatedWithoutTitle.length ? { truncatedWithoutTitle: read.truncatedWithoutTitle } : {}),
        }
        if (Object.keys(found).length) problems[name] = found
        await page.screenshot({ path: `${SHOTS}${name}-${width}.png`, fullPage: true })
      }
      expect(problems).toEqual({})
      expect(errors).toEqual([])
      await close()
    })
  }

  it('wraps long URLs in words’ worth at 390 px; a dialog and the one-time secret fit too', async () => {
    const { page, errors, close } = await tab(390)
    for (const [path, selector] of [
      ['/ui/integrations/webhooks', '.url-cell a'],
      [`/ui/integrations/webhooks/${ids.billing}`, 'h1 .break, dl.details .break'],
      ['/ui/events/evt_read_1/explain', '.url-cell a'],
    ] as const) {
      await page.goto(`${stack.url}${path}`)
      await page.locator(selector).first().waitFor()
      const wrapped = await charactersPerLine(page, selector)
      expect(wrapped.filter((w) => w.perLine < 12)).toEqual([])
    }
    // The discards endpoint's secret (its receiver checks none): the dialog, then the panel.
    await page.goto(`${stack.url}/ui/integrations/webhooks/${ids.discards}`)
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' })
    const box = (await dialog.boundingBox())!
    // Inside the screen with a margin, not edge to edge.
    expect([box.x >= 8, box.x + box.width <= 390 - 8]).toEqual([true, true])
    await page.screenshot({ path: `${SHOTS}dialog-390.png` })
    await dialog.getByRole('button', { name: 'Rotate secret' }).click()
    await page.getByRole('textbox', { name: 'Signing secret' }).waitFor()
    const withSecret = await overflowReport(page)
    expect(withSecret.offenders).toEqual([])
    expect(withSecret.scrollWidth).toBeLessThanOrEqual(withSecret.clientWidth)
    await page.screenshot({ path: `${SHOTS}secret-390.png`, fullPage: true })
    expect(errors).toEqual([])
    await close()
  })

  for (const width of WIDTHS) {
    it(`lays the sign-in page out in ${width} px`, async () => {
      const anonymous = await browser.newContext({ viewport: { width, height: 900 } })
      const { page, errors } = await openTab(anonymous)
      await page.goto(`${stack.url}/ui/sign-in`)
      await page.getByRole('heading', { name: 'Sign in' }).waitFor()
      const report = await overflowReport(page)
      expect(report.scrollWidth).toBeLessThanOrEqual(report.clientWidth)
      expect((await readabilityReport(page)).smallText).toEqual([])
      await page.screenshot({ path: `${SHOTS}sign-in-${width}.png`, fullPage: true })
      expect(errors).toEqual([])
      await anonymous.close()
    })
  }
})
