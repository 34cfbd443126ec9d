import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS_DIR } from './migrate.js'

/**
 * Merged migrations are frozen: a database that applied one must never see it change. Add a
 * new numbered file instead, and add its hash here when it is merged.
 */
const FROZEN: Record<string, string> = {
  '0001_ledger_and_projections.sql': 'f349586be45da377e3be038b845d2b365e697037fed8d0128e96a94e1b62087a',
  '0002_embeds_and_access_codes.sql': '34df17f35237f3d27dd339a2b0e76eab64cb91f50ae52770edcec65cb01551db',
  '0003_ledger_delivery_index.sql': '23e4510090db61f248ca83ee522c1eee6bcb58e48eb02411af6e7f8eba6ca963',
  '0004_attempt_history_view.sql': '8a118d61f0feea932a8e723933b6a111eeaf22bf3a1b2bfa809d18065f0aa5f7',
  '0005_delivery_id_from_pair.sql': 'acba9b75e4e540fc20d0f8de0bc81682e80d13d93e25475136805f41ee58c4d3',
  '0006_ledger_enforced.sql': '1a2085fe402715a8ee94c5ededeab27a5d7b05bd921bd60d89d3d3370bfe499e',
  '0007_ledger_checkpoints.sql': '9f19b06ecd3f411995dcc6e8880a5ec5481ba1f01bfcdb77328a1934bf5d00ec',
  '0008_delivery_snooze_budget.sql': 'a1deb0502cb5dc7279276c041021bc7ce09ae668a663e9892f13a1069b0aa9ad',
  '0009_endpoint_queue.sql': '87814aee4e23f0ad15971a1c5d1a9a1d0f024ab90dc6bd15a8e4e1763e8637b4',
  '0010_projection_retention.sql': 'ad13ee038e1c7a8c8cd01659b252f8e99f98abd451b78aec6f85b657f1425c3b',
  '0011_ledger_partitioned.sql': '6b0498e592155ce22fc1145f2c0be035e0a21ee4d8bd2cb8418d4afc9c1df6c8',
  '0012_ledger_guard_per_statement.sql': '7f3f76ed337ee926043410b10e0734906f936da24f1e65da28e460e4f9612579',
  '0013_endpoint_v1a_keys.sql': '23d9ea062c2641c4eff1fe8d8258841dde8ac26f6a5cc482148a209725fbc701',
  '0014_own_schema.sql': '0b0a638b8618d93a10ea9b6d52233b15cb4686486ac62949b21029bd33114429',
  '0015_delivery_log_index.sql': 'd32c1429016627abb510da98e6590a93eb73f82de112a22c5a7fab37df479fbd',
  '0016_ledger_event_decisions_index.sql': 'b42993d3c8eade247068bbfa1ff88c38799da223ebb1ecca2015c219a103b4e3',
  '0017_ledger_endpoint_attempts_index.sql': '6c55e0d9db57d45d75006a054afe63a32fbb26fa1ad34c61c5024b4cebf3480d',
  '0018_ledger_snapshots_and_archive.sql': '9b85709070b9c0e1d1c8a84ac622f2a909444d195a343d047e019013394868d2',
  '0019_ledger_guard_plans.sql': '5a88eef57ff2be49c049f6e55bdb0d45ff80ab8daa7de73c6c20c41c4f28826d',
}

describe('migrations', () => {
  it('are numbered, forward-only files', () => {
    const files = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort()
    files.forEach((f, i) => expect(f.startsWith(String(i + 1).padStart(4, '0') + '_')).toBe(true))
  })
  it.each(Object.entries(FROZEN))('%s is unchanged since it was merged', (file, hash) => {
    const actual = createHash('sha256').update(readFileSync(MIGRATIONS_DIR + file)).digest('hex')
    expect(actual).toBe(hash)
  })
})
