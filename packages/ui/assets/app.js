// Entry point: the routes, the page chrome (sidebar, sign-out) and the hand-over between screens.
import { session, setUnauthorizedHandler } from './api.js'
import { deliveryPage } from './delivery.js'
import { DELIVERIES_PATH, deliveriesLogPage } from './deliveries-log.js'
import { eventExplainPage } from './event-explain.js'
import { EVENT_TYPES_PATH, eventTypesPage } from './catalog/event-types.js'
import { endpointPage } from './endpoint.js'
import { newEndpointPage } from './endpoint-new.js'
import { OWNERS_PATH, ownersPage } from './owners/owners.js'
import { navigate, startRouter } from './router.js'
import { SIGN_IN_PATH, signInPage } from './sign-in.js'
import { asProblem, fill, flash, h, pageHeading, problemAlert } from './ui.js'
import { WEBHOOKS_PATH, webhooksPage } from './webhooks.js'

const routes = [
  { pattern: /^\/ui\/sign-in$/, page: signInPage, public: true },
  { pattern: /^\/ui\/integrations\/webhooks$/, page: webhooksPage, section: 'webhooks' },
  { pattern: /^\/ui\/integrations\/webhooks\/new$/, page: newEndpointPage, section: 'webhooks' },
  { pattern: /^\/ui\/integrations\/webhooks\/([^/]+)$/, page: endpointPage, section: 'webhooks' },
  { pattern: /^\/ui\/deliveries$/, page: deliveriesLogPage, section: 'deliveries' },
  { pattern: /^\/ui\/deliveries\/([^/]+)$/, page: deliveryPage, section: 'deliveries' },
  { pattern: /^\/ui\/events\/([^/]+)\/explain$/, page: eventExplainPage, section: 'deliveries' },
  { pattern: new RegExp(`^${EVENT_TYPES_PATH}$`), page: eventTypesPage, section: 'event-types' },
  { pattern: new RegExp(`^${OWNERS_PATH}$`), page: ownersPage, section: 'owners' },
]

const main = document.getElementById('main')
const sidebar = document.getElementById('sidebar')
const sessionBox = document.getElementById('session')

/** The screen on screen now: aborting it stops its polling and its pending requests. */
let current = null

function signInAgain(message) {
  session.clear()
  flash.set('sign-in', message)
  const next = location.pathname.startsWith(SIGN_IN_PATH)
    ? ''
    : `?next=${encodeURIComponent(location.pathname + location.search)}`
  navigate(`${SIGN_IN_PATH}${next}`, { replace: true })
}

setUnauthorizedHandler(() =>
  signInAgain('Your token was refused (401): it may have been revoked. Sign in again.'),
)

function renderChrome(route) {
  const signedIn = Boolean(session.token) && !route?.public
  sidebar.hidden = !signedIn
  for (const link of sidebar.querySelectorAll('a[data-section]')) {
    if (route?.section === link.dataset.section) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  fill(
    sessionBox,
    signedIn
      ? h(
          'button',
          {
            type: 'button',
            class: 'button secondary small',
            onclick: () => signInAgain('You signed out.'),
          },
          'Sign out',
        )
      : null,
  )
}

async function render() {
  current?.abort()
  const controller = new AbortController()
  current = controller
  const path = location.pathname.replace(/\/+$/, '')
  if (path === '/ui') return navigate(WEBHOOKS_PATH, { replace: true })
  let params = []
  const route = routes.find((r) => {
    const m = r.pattern.exec(path)
    if (m) params = m.slice(1).map(decodeURIComponent)
    return m
  })
  if (route && !route.public && !session.token) {
    flash.set('sign-in', null)
    return navigate(
      `${SIGN_IN_PATH}?next=${encodeURIComponent(location.pathname + location.search)}`,
      { replace: true },
    )
  }
  renderChrome(route)
  main.replaceChildren()
  document.title = 'hookledger admin'
  try {
    if (route) await route.page({ main, params, signal: controller.signal })
    else notFoundPage()
  } catch (err) {
    if (controller.signal.aborted) return
    main.append(problemAlert(asProblem(err)))
  }
  if (!controller.signal.aborted) main.querySelector('h1')?.focus({ preventScroll: true })
}

function notFoundPage() {
  document.title = 'Not found · hookledger admin'
  fill(
    main,
    pageHeading('Page not found'),
    h(
      'p',
      {},
      'There is no admin page here. ',
      h('a', { href: WEBHOOKS_PATH }, 'Go to Webhooks'),
      '.',
    ),
  )
}

startRouter(render)
