// The admin UI's Event types page in a real browser, over the real API and UI routes: an admin
// sees the subscribable catalog and declares a type with an operator token typed into the form
// (never stored); a refusal lands on its field; an operator token sees internal types too.
import { serve, type ServerType } from '@hono/node-server'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveChromium, testApi, testDatabase, type TestDatabase } from '@hookledger/testkit'
import { createUiRoutes } from '@hookledger/ui'

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
  const { executablePath, args, headless, env } = await resolveChromium()
  browser = await chromium.launch({ executablePath, args, headless, env })
})
afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  await database?.close()
})

async function tab(token: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  await context.addInitScript(`sessionStorage.setItem('hookledger.token', ${JSON.stringify(token)})`)
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  return { page, errors, close: () => context.close() }
}

describe('Integrations → Event types', () => {
  it('an admin lists the catalog and declares a type with an operator token; a refusal names its field', async () => {
    const { page, errors, close } = await tab(admin)
    await page.goto(`${url}/ui/integrations/event-types`)
    await page.getByRole('heading', { name: 'Event types', level: 1 }).waitFor()
    expect(await page.getByRole('link', { name: 'Event types' }).getAttribute('aria-current')).toBe('page')
    await page.getByRole('cell', { name: 'booking.created' }).waitFor()
    await page.getByLabel('Name').fill('order.created')
    await page.getByLabel('Exposure').selectOption('webhook')
    await page.getByLabel('Description (optional)').fill('An order was created.')
    await page.getByLabel('Data schema (optional)').fill('{"type":"object","required":["order_id"]}')
    await page.getByLabel('Operator token').fill(operator)
    await page.getByRole('button', { name: 'Declare event type' }).click()
    await page.getByText('Declared order.created (webhook)').waitFor()
    await page.getByRole('cell', { name: 'order.created' }).waitFor()
    expect(await page.getByLabel('Operator token').inputValue()).toBe('')

    // The same name again: 409, shown on the Name field.
    await page.getByLabel('Name').fill('order.created')
    await page.getByLabel('Operator token').fill(operator)
    await page.getByRole('button', { name: 'Declare event type' }).click()
    await page.locator('.field-error', { hasText: 'already declared' }).waitFor()
    // An admin token cannot declare: the form says so on the token field.
    await page.getByLabel('Name').fill('order.other')
    await page.getByLabel('Operator token').fill(admin)
    await page.getByRole('button', { name: 'Declare event type' }).click()
    await page.locator('.field-error', { hasText: 'no operator scope' }).waitFor()
    expect(errors).toEqual([])
    await close()
  })

  it('an operator token lists internal types too, and declares without a token field', async () => {
    const { page, errors, close } = await tab(operator)
    await page.goto(`${url}/ui/integrations/event-types`)
    await page.getByRole('heading', { name: 'Event types', level: 1 }).waitFor()
    expect(await page.getByLabel('Operator token').count()).toBe(0)
    await page.getByLabel('Name').fill('audit.tick')
    await page.getByLabel('Exposure').selectOption('internal')
    await page.getByRole('button', { name: 'Declare event type' }).click()
    await page.getByText('Declared audit.tick (internal)').waitFor()
    const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'audit.tick' }) })
    await expect.poll(() => row.getByRole('cell').nth(1).textContent()).toBe('internal')
    // A bad schema is refused before it is sent.
    await page.getByLabel('Name').fill('audit.bad')
    await page.getByLabel('Data schema (optional)').fill('{ not json')
    await page.getByRole('button', { name: 'Declare event type' }).click()
    await page.locator('.field-error', { hasText: 'not valid JSON' }).waitFor()
    expect(errors).toEqual([])
    await close()
  })
})
