import { mkdir } from 'node:fs/promises'
import { mkdirSync } from 'node:fs'
import type { Browser } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hookledger/testkit'
import {
  adminGet,
  createEndpoint,
  launchBrowser,
  openTab,
  publish as publishAs,
  signedInContext,
  startStack,
  type Stack,
} from './admin-ui-stack.js'

// Screenshots for review, in the checkout (git-ignored), not a /tmp another user may own.
const SHOTS = new URL('../../bench-results/ui/', import.meta.url).pathname
mkdirSync(SHOTS, { recursive: true })
const SCREENSHOT = `${SHOTS}endpoint.png`
const SCREENSHOT_ATTEMPTS = `${SHOTS}attempts.png`

let stack: Stack
let browser: Browser

beforeAll(async () => {
  ;[stack, browser] = await Promise.all([startStack(), launchBrowser()])
})

afterAll(async () => {
  await browser?.close()
  await stack?.stop()
})

const publish = (id: string, type?: string) => publishAs(stack, id, type)

describe('admin UI in a real browser', () => {
  it('signs in, creates an endpoint, follows a delivery to its attempts, sends a test and disables', async () => {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    })
    const { page, errors } = await openTab(context)

    // Sign in: a refused token is explained next to the field, both for 401 and 403.
    await page.goto(`${stack.url}/ui`)
    await page.waitForURL(/\/ui\/sign-in/)
    const tokenField = page.getByLabel('Access token')
    const signIn = page.getByRole('button', { name: 'Sign in' })
    await tokenField.fill('hl_not_a_real_token')
    await signIn.click()
    await page.getByText('This token was not accepted (401)').waitFor()
    expect(await tokenField.getAttribute('aria-invalid')).toBe('true')
    await tokenField.fill(stack.publishOnlyToken)
    await signIn.click()
    await page.getByText('it needs the admin scope').waitFor()
    await tokenField.fill(stack.adminToken)
    await signIn.click()
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor()
    await page.getByText('No endpoints yet.').waitFor()

    // Add endpoint: the server's refusals land on the field at fault, a private address on the
    // URL, a glob that matches nothing on the glob field.
    await page.getByRole('link', { name: 'Add endpoint' }).click()
    await page.getByRole('checkbox', { name: /booking\.created/ }).check()
    const urlField = page.getByLabel('Endpoint URL')
    const globField = page.getByLabel('More event types or globs')
    await urlField.fill('http://10.1.2.3/hook')
    await globField.fill('nothing.*')
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    expect(await page.locator('#endpoint-url-error').innerText()).toContain(
      '10.1.2.3 is not allowed',
    )
    expect(await urlField.getAttribute('aria-invalid')).toBe('true')
    await urlField.fill(stack.receiver.url())
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    expect(await page.locator('#endpoint-globs-error').innerText()).toContain(
      '"nothing.*" matches no webhook-visible event type',
    )
    expect(await urlField.getAttribute('aria-invalid')).toBeNull()
    await globField.fill('')
    await page.getByLabel('Description').fill('Bookings receiver')
    await page.getByRole('button', { name: 'Create endpoint' }).click()

    // The one-time secret, with its warning and a working copy button.
    const secretField = page.getByRole('textbox', { name: 'Signing secret' })
    await secretField.waitFor()
    const secret = await secretField.inputValue()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    await page.getByText('it will not be shown again').waitFor()
    await page.getByRole('button', { name: 'Copy' }).click()
    await page.getByText('Copied to the clipboard.').waitFor()
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret)
    stack.verifiers.set('/hook', new Webhook(secret))
    const endpointId = new URL(page.url()).pathname.split('/').pop()!
    expect(endpointId).toMatch(/^[0-9a-f-]{36}$/)

    // A published event shows up in the delivery log by itself, completed.
    await publish('evt_ui_booking_1')
    const row = page.locator('tbody tr', { hasText: 'evt_ui_booking_1' })
    await row.getByText('completed', { exact: true }).waitFor()
    expect(stack.verified).toEqual(['evt_ui_booking_1'])
    const attemptsLink = row.getByRole('link', { name: /View attempts/ })
    const [delivery] = (
      await adminGet<{ data: { id: string; link: string }[] }>(stack, `/api/admin/webhooks/${endpointId}/deliveries`)
    ).data
    expect(await attemptsLink.getAttribute('href')).toBe(delivery!.link)
    expect(delivery!.link).toBe(`${stack.url}/ui/deliveries/${delivery!.id}`)

    // Its attempts page: one run, one attempt answered 204.
    await attemptsLink.click()
    await page.waitForURL(`**/ui/deliveries/${delivery!.id}`)
    await page.getByRole('heading', { level: 1, name: /booking\.created/ }).waitFor()
    await page.getByRole('heading', { level: 2, name: 'Run 1' }).waitFor()
    const attemptRows = page.locator('section.run tbody tr')
    expect(await attemptRows.count()).toBe(1)
    const [attemptNo, , duration, status, error, outcome, signedWith] = await attemptRows
      .first()
      .locator('td')
      .allInnerTexts()
    expect([attemptNo, status, error, outcome]).toEqual(['1', '204', '—', 'completed'])
    expect(duration).toMatch(/^\d+ ms$/)
    expect(signedWith).toMatch(/\S/)
    await page.screenshot({ path: SCREENSHOT_ATTEMPTS, fullPage: true })

    // Back to the endpoint (a reload: the shell answers every /ui path): send test.
    await page.goto(`${stack.url}/ui/integrations/webhooks/${endpointId}`)
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByText(/Test event evt_\w+ queued/).waitFor()
    await page
      .locator('tbody tr', { hasText: 'webhook.test' })
      .getByText('completed', { exact: true })
      .waitFor()
    expect(stack.receiver.requests.map((r) => JSON.parse(r.body).type)).toEqual([
      'booking.created',
      'webhook.test',
    ])

    // Disable: the state changes on the page and on the server; sending is switched off.
    await page.getByRole('button', { name: 'Disable endpoint' }).click()
    await page.getByText('Endpoint disabled.').waitFor()
    await page.locator('.head-state').getByText('disabled', { exact: true }).waitFor()
    await page.getByRole('button', { name: 'Enable endpoint' }).waitFor()
    expect(await page.getByRole('button', { name: 'Send test' }).isDisabled()).toBe(true)
    expect(
      (await adminGet<{ enabled: boolean; state: string }>(stack, `/api/admin/webhooks/${endpointId}`))
        .state,
    ).toBe('disabled')
    await page.screenshot({ path: SCREENSHOT, fullPage: true })

    // The list shows it too.
    await page
      .getByRole('navigation', { name: 'Admin sections' })
      .getByRole('link', { name: 'Webhooks' })
      .click()
    const listRow = page.locator('tbody tr', { hasText: stack.receiver.url() })
    await listRow.getByText('disabled', { exact: true }).waitFor()
    expect(await listRow.getByText('booking.created').count()).toBe(1)

    // Published while it was disabled, recovered once enabled: counted first, then sent.
    await publish('evt_missed_while_disabled')
    await page.goto(`${stack.url}/ui/integrations/webhooks/${endpointId}`)
    await page.getByRole('button', { name: 'Enable endpoint' }).click()
    await page.getByText('Endpoint enabled').waitFor()
    await page.getByRole('button', { name: 'Find missed events' }).click()
    await page.getByText(/^1 missed event to send/).waitFor()
    await page.getByRole('button', { name: 'Send them' }).click()
    await page.getByText('Recovered: 1 event queued for this endpoint.').waitFor()
    await eventually('the missed event to arrive', () => stack.receiver.requests.some((r) => r.headers['webhook-id'] === 'evt_missed_while_disabled'))

    expect(errors).toEqual([])
    await context.close()
  })

  it('shows a discarded delivery, rotates the secret, redelivers it as run 2, and deletes', async () => {
    // v1+v1a: the receiver here checks the v1 entry; the page shows the v1a public key.
    const { endpoint, secret: firstSecret } = await createEndpoint(stack, {
      url: stack.receiver.url('/second'),
      event_types: ['booking.*'],
      signature_scheme: 'v1+v1a',
    })

    const context = await signedInContext(browser, stack)
    const { page, errors } = await openTab(context)
    await page.goto(`${stack.url}/ui/integrations/webhooks/${endpoint.id}`)
    const publicKey = page.locator('#endpoint-public-key')
    expect(endpoint.public_key).toMatch(/^whpk_/)
    expect(await publicKey.innerText()).toBe(endpoint.public_key)
    await page.getByText('v1 and v1a — both signatures on every request').waitFor()

    // The receiver does not know this endpoint's secret yet: 400, discarded at once.
    await publish('evt_ui_booking_2')
    const row = page.locator('tbody tr', { hasText: 'evt_ui_booking_2' })
    await row.getByText('discarded', { exact: true }).waitFor()
    await row.getByText('400', { exact: true }).waitFor()

    await page.getByRole('button', { name: 'Rotate secret' }).click()
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' })
    await dialog.getByRole('button', { name: 'Rotate secret' }).click()
    const secretField = page.getByRole('textbox', { name: 'Signing secret' })
    await secretField.waitFor()
    const rotated = await secretField.inputValue()
    expect(rotated).toMatch(/^whsec_/)
    expect(rotated).not.toBe(firstSecret)
    stack.verifiers.set('/second', new Webhook(rotated))
    // The key pair rotated with the secret: the page shows the new public key.
    await page.getByText('Secret and v1a key pair rotated.').waitFor()
    const rotatedKey = await publicKey.innerText()
    expect(rotatedKey).toMatch(/^whpk_/)
    expect(rotatedKey).not.toBe(endpoint.public_key)
    await page.getByRole('button', { name: 'I have stored it' }).click()
    expect(await secretField.count()).toBe(0)

    // Redeliver: the discarded delivery runs again and now completes.
    await page.getByRole('button', { name: 'Redeliver discarded' }).click()
    await page.getByText('Redeliver: 1 requeued, 0 skipped.').waitFor()
    await row.getByText('completed', { exact: true }).waitFor()
    await row.getByRole('link', { name: /View attempts/ }).click()
    await page.getByRole('heading', { level: 2, name: 'Run 2' }).waitFor()
    await page.getByText(/Redelivered by owner token [0-9a-f-]{36}/).waitFor()
    const runs = page.locator('section.run')
    expect(await runs.count()).toBe(2)
    expect(await runs.nth(0).locator('tbody td').nth(3).innerText()).toBe('400')
    expect(await runs.nth(0).locator('tbody td').nth(5).innerText()).toBe('discarded')
    expect(await runs.nth(1).locator('tbody td').nth(3).innerText()).toBe('204')

    // Delete, after a confirmation; the list says what happened.
    await page.goBack()
    await page.getByRole('button', { name: 'Delete endpoint' }).click()
    await page
      .getByRole('dialog', { name: 'Delete this endpoint?' })
      .getByRole('button', { name: 'Delete endpoint' })
      .click()
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor()
    await page.getByText(`Deleted ${stack.receiver.url('/second')}`).waitFor()
    expect(await page.title()).toBe('Webhooks · hookledger admin')
    expect(
      (
        await fetch(`${stack.url}/api/admin/webhooks/${endpoint.id}`, {
          headers: { authorization: `Bearer ${stack.adminToken}` },
        })
      ).status,
    ).toBe(404)

    await page.goto(`${stack.url}/ui/deliveries/00000000-0000-4000-8000-000000000000`)
    await page.getByRole('heading', { level: 1, name: 'Delivery not found' }).waitFor()

    expect(errors).toEqual([])
    await context.close()
  })

  it('edits an endpoint’s event types, finds a discarded delivery in the log by type, reads the answer, resends it, sees its health, and explains an event', async () => {
    const create = (path: string, event_types: string[]) =>
      createEndpoint(stack, { url: stack.receiver.url(path), event_types })
    const third = await create('/third', ['booking.created'])
    const unsubscribed = await create('/fourth', ['access_request.*'])

    const context = await signedInContext(browser, stack)
    const { page, errors } = await openTab(context)

    // Edit the endpoint's event types: booking.created off, booking.cancelled on; same id and secret.
    const endpointPage = `${stack.url}/ui/integrations/webhooks/${third.endpoint.id}`
    await page.goto(endpointPage)
    await page.getByRole('button', { name: 'Edit' }).click()
    const editForm = page.getByRole('form', { name: 'Edit endpoint' })
    const box = (type: string) => editForm.locator(`input[type=checkbox][value="${type}"]`)
    expect(await box('booking.created').isChecked()).toBe(true)
    await editForm.getByLabel('URL', { exact: true }).fill('example.com/hook')
    await editForm.getByRole('button', { name: 'Save changes' }).click()
    expect(await page.locator('#edit-endpoint-url-error').innerText()).toContain('URL must start with http:// or https://')
    await editForm.getByLabel('URL', { exact: true }).fill(stack.receiver.url('/third'))
    await box('booking.created').uncheck()
    await box('booking.cancelled').check()
    await editForm.getByLabel('Description').fill('Cancellations')
    await editForm.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText('Endpoint saved.').waitFor()
    await page.locator('dl.details').getByText('booking.cancelled', { exact: true }).waitFor()
    expect(await page.locator('dl.details').getByText('booking.created', { exact: true }).count()).toBe(0)
    const saved = await adminGet<{ event_types: string[]; description: string }>(stack, `/api/admin/webhooks/${third.endpoint.id}`)
    expect(saved).toMatchObject({ event_types: ['booking.cancelled'], description: 'Cancellations' })
    await publish('evt_ui_log', 'booking.cancelled')

    await page.goto(`${stack.url}/ui/deliveries`)
    await page.getByRole('heading', { level: 1, name: 'Delivery log' }).waitFor()
    const filters = page.getByRole('search', { name: 'Filter deliveries' })
    await filters.getByLabel('Event type').selectOption('booking.cancelled')
    await filters.getByLabel('State').selectOption('discarded')
    // Discarded once the receiver (which does not know this secret) has answered 400.
    const row = page.locator('tbody tr', { hasText: 'evt_ui_log' })
    await filters.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL(/state=discarded/)
    for (let i = 0; i < 50 && (await row.count()) === 0; i++) {
      await filters.getByRole('button', { name: 'Filter' }).click()
      await page.waitForTimeout(200)
    }
    await row.getByText('discarded', { exact: true }).waitFor()
    expect(new URL(page.url()).search).toBe('?state=discarded&event_type=booking.cancelled')
    await mkdir('bench-results', { recursive: true })
    await page.screenshot({ path: 'bench-results/ui-delivery-log.png', fullPage: true })

    await row.getByRole('link', { name: 'View attempts' }).click()
    await page.getByText('Request and response of attempt 1').click()
    const response = page.getByRole('region', { name: 'Response of attempt 1' })
    await response.getByText('HTTP 400').waitFor()
    await response.getByText('no secret for this path').waitFor()
    const request = page.getByRole('region', { name: 'Request of attempt 1' })
    await request.getByText(`POST ${stack.receiver.url('/third')}`).waitFor()
    expect(await request.locator('pre').innerText()).toContain('"id":"evt_ui_log"')
    await page.screenshot({ path: 'bench-results/ui-attempt-detail.png', fullPage: true })

    stack.verifiers.set('/third', new Webhook(third.secret))
    await page.getByRole('button', { name: 'Resend' }).click()
    await page.getByText('Resent: run 2 is due now.').waitFor()
    await page.getByRole('heading', { level: 2, name: 'Run 2' }).waitFor()
    await page.locator('dl.details').getByText('completed', { exact: true }).waitFor()
    expect(stack.verified).toContain('evt_ui_log')

    // Its health: one discarded attempt and one completed, drawn as a chart on its page…
    await page.goto(endpointPage)
    const healthSection = page.getByRole('region', { name: 'Health' })
    await healthSection.locator('[data-figure=attempts]', { hasText: '2' }).waitFor()
    expect(await healthSection.locator('[data-figure=success-rate]').innerText()).toBe('50%')
    expect(await healthSection.locator('svg.health-chart rect[data-outcome=discarded]').count()).toBe(1)
    expect(await healthSection.locator('svg.health-chart rect[data-outcome=completed]').count()).toBe(1)
    await page.screenshot({ path: 'bench-results/ui-endpoint-health.png', fullPage: true })
    await healthSection.getByLabel('Window').selectOption('7d')
    await healthSection.locator('svg.health-chart g.bar').nth(27).waitFor()
    // …and as a sparkline in the endpoint list.
    await page.goto(`${stack.url}/ui/integrations/webhooks`)
    const spark = page.locator(`[data-health-of="${third.endpoint.id}"] svg.sparkline`)
    await spark.waitFor()
    expect(await spark.getAttribute('aria-label')).toContain('2 attempts, 50% completed')
    await page.screenshot({ path: 'bench-results/ui-endpoint-list.png', fullPage: true })

    await page.goto(`${stack.url}/ui/deliveries`)
    const explain = page.getByRole('form', { name: 'Explain an event' })
    await explain.getByLabel(/Why did an endpoint/).fill('evt_ui_log')
    await explain.getByRole('button', { name: 'Explain' }).click()
    await page.getByRole('heading', { level: 1, name: 'What happened to evt_ui_log' }).waitFor()
    await page.locator('tr', { hasText: stack.receiver.url('/fourth') }).getByText('not subscribed: its event types are access_request.*').waitFor()
    await page.locator('tr', { hasText: stack.receiver.url('/third') }).getByText('delivered').waitFor()
    await page.screenshot({ path: 'bench-results/ui-explain.png', fullPage: true })
    void unsubscribed

    // 390 px wide: the log still fits (its table scrolls on its own).
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${stack.url}/ui/deliveries`)
    await page.getByRole('heading', { level: 1, name: 'Delivery log' }).waitFor()
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.screenshot({ path: 'bench-results/ui-delivery-log-390.png', fullPage: true })

    expect(errors).toEqual([])
    await context.close()
  })

  it('serves the shell for every /ui page and only the files it ships', async () => {
    const shell = await fetch(`${stack.url}/ui/integrations/webhooks/anything`)
    expect(shell.status).toBe(200)
    expect(shell.headers.get('content-type')).toContain('text/html')
    expect(shell.headers.get('content-security-policy')).toContain("script-src 'self'")
    const css = await fetch(`${stack.url}/ui/assets/style.css`)
    expect(css.headers.get('content-type')).toContain('text/css')
    const again = await fetch(`${stack.url}/ui/assets/style.css`, {
      headers: { 'if-none-match': css.headers.get('etag')! },
    })
    expect(again.status).toBe(304)
    expect((await fetch(`${stack.url}/ui/assets/missing.js`)).status).toBe(404)
    expect((await fetch(`${stack.url}/ui/assets/..%2Fsrc%2Findex.ts`)).status).toBe(404)
    // The API keeps answering problems for its own paths.
    expect((await fetch(`${stack.url}/api/admin/webhooks`)).headers.get('content-type')).toBe(
      'application/problem+json',
    )
  })
})
