// One endpoint: its header (URL and state), the actions (enable/disable, send test, redeliver,
// rotate, delete), the one-time secret after create or rotate, its details (and their edit
// form), its health chart and its delivery log. Each section lives in its own module; this one
// loads the endpoint, lays them out and keeps them fresh.
import { api, endpointPath } from './api.js'
import { breadcrumbs, every, fill, flash, h, pageHeading, problemAlert } from './ui.js'
import { endpointActions } from './endpoint-actions.js'
import { deliveryLog } from './endpoint-deliveries.js'
import { endpointDetails } from './endpoint-details.js'
import { endpointHealthSection } from './endpoint-health-chart.js'
import { secretPanel } from './endpoint-secret-panel.js'
import { WEBHOOKS_PATH, endpointState } from './webhooks.js'

const REFRESH_MS = 2000

export async function endpointPage({ main, params: [id], signal }) {
  document.title = 'Endpoint · hookledger admin'
  const handedOver = flash.take('endpoint')
  let endpoint
  try {
    endpoint = await api('GET', endpointPath(id), { signal })
  } catch (err) {
    if (signal.aborted) return
    fill(main, endpointLoadFailure(err))
    return
  }

  // The endpoint on screen, shared by the sections: an action or a refresh replaces it.
  const state = { endpoint }
  const header = endpointHeader()
  const secretSlot = h('div')
  const showSecret = (secret, created) => fill(secretSlot, secretPanel(secret, { created }))
  if (handedOver?.secret) showSecret(handedOver.secret, handedOver.created)

  const renderEndpoint = () => {
    document.title = `${state.endpoint.url} · Webhooks · hookledger admin`
    header.render(state.endpoint)
    details.render(state.endpoint)
    actions.render(state.endpoint)
  }
  const log = deliveryLog(id, signal)
  const health = endpointHealthSection(id, signal)
  const actions = endpointActions(id, { state, signal, render: renderEndpoint, showSecret, log })
  const details = endpointDetails(state, {
    signal,
    onSaved: (updated) => {
      state.endpoint = updated
      renderEndpoint()
      actions.say('Endpoint saved.')
    },
  })
  fill(
    main,
    endpointCrumbs(),
    header.heading,
    header.headState,
    secretSlot,
    actions.section,
    details.section,
    health.section,
    log.section,
  )
  renderEndpoint()
  await Promise.all([log.reload(), health.reload()])
  keepFresh(id, signal, state, renderEndpoint, [log, health])
}

const endpointCrumbs = () =>
  breadcrumbs(['Integrations', WEBHOOKS_PATH], ['Webhooks', WEBHOOKS_PATH], ['Endpoint'])

/** The page when the endpoint could not be loaded: gone (404), or the problem. */
function endpointLoadFailure(err) {
  return [
    endpointCrumbs(),
    pageHeading(err.status === 404 ? 'Endpoint not found' : 'Endpoint'),
    err.status === 404
      ? h(
          'p',
          {},
          'It may have been deleted. ',
          h('a', { href: WEBHOOKS_PATH }, 'Back to Webhooks'),
          '.',
        )
      : problemAlert(err, 'Could not load the endpoint.'),
  ]
}

/** The page heading (the endpoint's URL) and its state under it. */
function endpointHeader() {
  const heading = pageHeading()
  const headState = h('div', { class: 'head-state' })
  const render = (endpoint) => {
    fill(heading, h('span', { class: 'break' }, endpoint.url))
    fill(headState, endpointState(endpoint))
  }
  return { heading, headState, render }
}

/**
 * Every few seconds while the page is open: the endpoint again (redrawn only when it changed),
 * then the live refresh of each section that has one, together.
 * @param {{ refresh: () => Promise<void> }[]} sections
 */
function keepFresh(id, signal, state, render, sections) {
  every(REFRESH_MS, signal, async () => {
    try {
      const fresh = await api('GET', endpointPath(id), { signal })
      if (fresh.updated_at !== state.endpoint.updated_at) {
        state.endpoint = fresh
        render()
      }
    } catch {
      // The log's own refresh shows what is wrong; a 401 has already signed the user out.
    }
    await Promise.all(sections.map((s) => s.refresh()))
  })
}
