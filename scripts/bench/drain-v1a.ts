/**
 * Scenario `drain-v1a`: the drain with every endpoint on v1a (ed25519) vs v1 (HMAC), same run
 * (drain-v1a-run.ts does the work; this wires it to the harness).
 */
import { newDispatcher, newTransport, publish } from './fixtures.js'
import { freshDatabase, type ScenarioContext, type ScenarioOutput } from './harness.js'
import { drainV1aScenario } from './drain-v1a-run.js'
import { OWNER, QUICK, cfg } from './settings.js'

export function drainV1a({ env }: ScenarioContext): Promise<ScenarioOutput> {
  return drainV1aScenario({
    quick: QUICK,
    owner: OWNER,
    endpoints: cfg.endpoints,
    events: cfg.drainEvents,
    secretBox: env.secretBox,
    receiver: env.receiver,
    freshDatabase: (name) => freshDatabase(env, name),
    publish,
    newDispatcher: (db, url, workerId) => {
      const transport = newTransport(env)
      const { dispatcher, notifier } = newDispatcher(env, db, url, transport, workerId)
      return { dispatcher, close: async () => { await dispatcher.stop(); await notifier.close(); await transport.close() } }
    },
  })
}
