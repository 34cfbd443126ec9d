// The admin UI's Owners page in a real browser, over the real API and UI routes: an operator sees
// every owner with its usage, sets limits (an emptied box clears one), suspends and resumes; an
// admin token is told the page is an operator's and sees no owner.
import { mkdirSync } from 'node:fs'
import { serve, type ServerType } from '@hono/node-server'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveChromium, testApi, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { createUiRoutes } from '@hookledger/ui'
import { overflowReport, readabilityReport } from './admin-ui-measure.js'

const SHOTS = new URL('../../bench-results/ui/', import.meta.url).pathname
mkdirSync(SHOTS, { recursive: true })

let database: TestDatabase
let server: ServerType
let browser: Browser
let url = ''
let admin = ''
let operator = ''

beforeAll(async () => {
  database = await testDatabase()
  const api = testApi(database.db)
  api.app.route('/', createUiRoutes())
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: api.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port))
  })
  url = `http://127.0.0.1:${port}`
  admin = await api.token('acme', ['admin', 'publish'])
  operator = await api.token('*', ['operator'])
  // acme exists through its endpoint (no row of its own yet: the defaults).
  const created = await fetch(`${url}/api/admin/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://receiver.example/hook', event_types: ['booking.*'] }),
  })
  expect(created.status).toBe(201)
  const { executablePath, args, headless, env } = await resolveChromium()
  browser = await chromium.launch({ executablePath, args, headless, env })
})
afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  await database?.close()
})

async function tab(token: string, width = 1280) {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  await context.addInitScript(`sessionStorage.setItem('hookledger.token', ${JSON.stringify(token)})`)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  return { page, errors, close: () => context.close() }
}

interface OwnerView { publish_per_second: number | null; max_endpoints: number | null; suspended: { at: string } | null }
const ownerOf = async (id: string): Promise<OwnerView> =>
  (await (await fetch(`${url}/api/operator/owners/${id}`, { headers: { authorization: `Bearer ${operator}` } })).json()) as OwnerView

describe('Operator → Owners', () => {
  it('an operator lists owners with their usage, sets and clears limits, suspends and resumes', async () => {
    const { page, errors, close } = await tab(operator)
    await page.goto(`${url}/ui/operator/owners`)
    await page.getByRole('heading', { name: 'Owners', level: 1 }).waitFor()
    expect(await page.getByRole('link', { name: 'Owners' }).getAttribute('aria-current')).toBe('page')
    const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'acme', exact: true }) })
    await row.waitFor()
    await expect.poll(() => row.getByRole('cell').nth(3).textContent()).toBe('1')
    await expect.poll(() => row.getByRole('cell').nth(2).textContent()).toBe('none (weight 1)')

    await row.getByText('Limits', { exact: true }).click()
    await row.getByLabel('Max endpoints').fill('5')
    await row.getByLabel('Publishes per second').fill('2')
    await row.getByRole('button', { name: 'Save limits' }).click()
    await expect.poll(async () => (await ownerOf('acme')).max_endpoints).toBe(5)
    expect((await ownerOf('acme')).publish_per_second).toBe(2)
    const fresh = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'acme', exact: true }) })
    await expect.poll(() => fresh.getByRole('cell').nth(2).textContent()).toContain('≤ 5 endpoints')

    // Emptying a box clears that limit; the other stays.
    await fresh.getByText('Limits', { exact: true }).click()
    await fresh.getByLabel('Max endpoints').fill('')
    await fresh.getByRole('button', { name: 'Save limits' }).click()
    await expect.poll(async () => (await ownerOf('acme')).max_endpoints).toBe(null)
    expect((await ownerOf('acme')).publish_per_second).toBe(2)

    await page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'acme', exact: true }) }).getByRole('button', { name: 'Suspend' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Suspend' }).click()
    await expect.poll(async () => (await ownerOf('acme')).suspended !== null).toBe(true)
    const suspended = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'acme', exact: true }) })
    await suspended.getByText('suspended', { exact: true }).waitFor()
    await suspended.getByRole('button', { name: 'Resume' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Resume' }).click()
    await expect.poll(async () => (await ownerOf('acme')).suspended).toBe(null)
    await page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'acme', exact: true }) }).getByText('active', { exact: true }).waitFor()
    expect(errors).toEqual([])
    await close()
  })

  for (const width of [390, 1280]) {
    it(`lays the page out in ${width} px, a limits form open: no sideways scroll, no text under 11 px`, async () => {
      const { page, errors, close } = await tab(operator, width)
      await page.goto(`${url}/ui/operator/owners`)
      // At 390 px a row is a card (no table roles): found by its owner's code.
      const row = page.locator('tbody tr', { has: page.locator('code', { hasText: /^acme$/ }) })
      await row.waitFor()
      await row.getByText('Limits', { exact: true }).click()
      await row.getByLabel('Weight').waitFor()
      const overflow = await overflowReport(page)
      expect(overflow.offenders).toEqual([])
      expect(overflow.scrollingTables).toEqual([])
      expect(overflow.scrollWidth).toBeLessThanOrEqual(overflow.clientWidth)
      expect((await readabilityReport(page)).smallText).toEqual([])
      await page.screenshot({ path: `${SHOTS}owners-${width}.png`, fullPage: true })
      expect(errors).toEqual([])
      await close()
    })
  }

  it('more owners than a page: the first 200, then "More owners" adds the rest under them', async () => {
    // Owners known by a row of their own (limits set), after every other by id.
    for (let i = 0; i < 205; i++) {
      const set = await fetch(`${url}/api/operator/owners/zz-${String(i).padStart(3, '0')}/limits`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
        body: JSON.stringify({ weight: 2 }),
      })
      expect(set.status).toBe(200)
    }
    let total = 0
    for (let cursor: string | null = '', pages = 0; cursor !== null && pages < 10; pages++) {
      const page = (await (await fetch(`${url}/api/operator/owners?limit=200${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${operator}` } })).json()) as { data: unknown[]; next_cursor: string | null }
      total += page.data.length
      cursor = page.next_cursor
    }
    expect(total).toBeGreaterThan(205)
    const { page, errors, close } = await tab(operator)
    await page.goto(`${url}/ui/operator/owners`)
    await page.getByText('200 owners so far').waitFor()
    expect(await page.locator('tbody tr').count()).toBe(200)
    await page.getByRole('button', { name: 'More owners' }).click()
    await page.getByText(`${total} owners:`).waitFor()
    expect(await page.locator('tbody tr').count()).toBe(total)
    expect(await page.getByRole('button', { name: 'More owners' }).count()).toBe(0)
    expect(errors).toEqual([])
    await close()
  })

  it('an admin token is told the page is an operator one, and sees no owner', async () => {
    const { page, errors, close } = await tab(admin)
    await page.goto(`${url}/ui/operator/owners`)
    await page.getByText('Owners is an operator page').waitFor()
    expect(await page.getByRole('cell', { name: 'acme', exact: true }).count()).toBe(0)
    expect(errors).toEqual([])
    await close()
  })
})
