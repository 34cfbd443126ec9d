import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS_DIR } from './migrate.js'

/**
 * Merged migrations are frozen: a database that applied one must never see it change. Add a
 * new numbered file instead, and add its hash here when it is merged. The list starts at the
 * baseline (the whole schema of a fresh install; the migrations before it were squashed into it
 * before any deployment ran them).
 */
const FROZEN: Record<string, string> = {
  '0001_baseline.sql': '8e70b3fddb3887eb6463894f5bb6a9c0712e270387c9c49c9d8a850956fdf05d',
  '0002_delivery_states.sql': '7681d0aae3b38b42907c9cad8cfb3c2473297ec9c83730710e67cbb56d363afd',
  '0003_transparency_log.sql': 'efa362a1219013f521bd8eee3b317706204a519b7b5c188728d9da1ab2f81da2',
  '0004_endpoint_options.sql': '973093a26a70dd76175cd5d413c0a1eeb472849d0f1c338c8e9be8303f1d8294',
  '0005_event_catalog.sql': '790f5e3fa2f6079d22373d1a2f4567924961b75a8fbf528f7e4364ada2c7309d',
  '0006_cool_down_release.sql': '620e7b7d427fe3cd19687a6ec0a7a0c6eb4d6d572aaa680bcf5ff26018266671',
  '0007_endpoint_calling.sql': 'a204137ed9be9d4e62824dae9d5d9a2b8d3a6c5acbba02d9a39b3ad6bd8f58ce',
  '0008_endpoint_pacing.sql': '337fa91c5add0aa23926e154459400f63f3325fba073e15628074929c058f6e6',
  '0009_owners.sql': '40d762bb61a3c0cba2045decd928aeecc4314a08a16ed544777e6d4b855c4c8a',
  '0010_owner_fair_share.sql': '72b452ad7a48d1883819127556302881a75b1fcc4767bdd99e1131317e6fa984',
  '0011_strict_ordering.sql': '4674d00d8c92eb870a9deb7532174f1f8e8e53306b1a401e7701b6c2d26dea6c',
  '0012_statistics_refresh.sql': 'fa0dc5f353c8ace53388cff03154e289600d0834e398e2c5c36b8ee75a50fe48',
  '0013_history_blind_writes.sql': 'bff5dc7281e60954d8e406fa4b95b3465fa66f7acdc6054b16feb81674421579',
  '0014_write_only_what_it_needs.sql': '93f836e55d933de4659e5734b3c30605f8179969807f6b34b25fda28f9a4e3f4',
  '0015_fanout_enqueues.sql': '3a6311a0dbd16ac4096123e86c5186f578b443b11bf4410d00a2cbbcbd651fb4',
  '0016_statistics_follow_size.sql': 'a32d7f1a9225969623578ef2c40e08c7e6127f8f39fab84be8f3ec2063396c7c',
  '0017_strict_line_waits_for_fanout.sql': 'e6b8951e6f348db14059bb8acbbdabb3bdb54c602d671545e9ae92666da93e28',
  '0018_publish_admission.sql': '258b65df74f86f426e0e70f07d5e1f4b519c101224d726b1958ccd32b835024b',
  '0019_leased_head_on_a_grid.sql': '3426f82816347dea15f2f6377bbb185f591017ec79a37dcf97cda7f108c4d03c',
  '0020_settle_by_position.sql': '8486dffa30c3987d7cb774c8bdcab54d01da530daf420ad62b4b3d0d8bb6b8a5',
  '0021_state_rows_rewritten_in_place.sql': '270f481caccf9ffaf2a7b7bc5cac059497c1bc5fe0c4120af65aa4ef202d2865',
  '0022_claim_names_its_worker_once.sql': 'bbb0c0be8a5db61d0f26dcd7b4934e70a7244a95a2afef5e97192008d797d902',
  '0023_attempt_leaves_out_the_usual.sql': 'f4f5d755f11a391ffa1240989786d62386d8035ca74a4d621ebffb1ce38db35e',
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
