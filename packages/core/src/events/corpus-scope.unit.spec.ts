import { describe, expect, it } from 'vitest'
import {
  type AccessCode,
  allowsCorpusEntry,
  corpusEntryDenial,
  corpusEntryFromEvent,
  type CorpusEntry,
  decideScope,
  isCanonicalSubject,
  isRawSubject,
  matchesSubjectGlob,
  requiresEmbedScope,
  type ScopeInput,
  standaloneAdmits,
  SUBJECT_GLOB_MAX_LENGTH,
  SUBJECT_MAX_LENGTH,
} from './corpus-scope.js'

const ARCH = 'wiki://software/project/standmeet/architecture'
const NOTE = 'corpus.note.changed'

describe('isRawSubject', () => {
  it.each([
    ['raw://inbox/1', true],
    ['RAW://inbox/1', true],
    ['  raw://inbox/1', true],
    ['raw://', true],
    ['wiki://raw://x', false],
    ['rawr://x', false],
    ['raw:/x', false],
    ['wiki://software', false],
    ['', false],
  ])('%j → %s', (subject, expected) => {
    expect(isRawSubject(subject)).toBe(expected)
  })
})

describe('standaloneAdmits', () => {
  it.each<[string, string, unknown, boolean]>([
    [NOTE, ARCH, { published: true, was_published: false }, true],
    [NOTE, ARCH, { published: false, was_published: true }, true],
    [NOTE, ARCH, { published: true, was_published: true }, true],
    [NOTE, ARCH, { published: false, was_published: false }, false],
    [NOTE, ARCH, {}, false],
    [NOTE, ARCH, null, false],
    [NOTE, ARCH, 'published', false],
    [NOTE, ARCH, { published: 'true', was_published: 1 }, false],
    [NOTE, ARCH, Object.create({ published: true }), false],
    [NOTE, 'raw://inbox/1', { published: true, was_published: true }, false],
    ['booking.created', 'booking://42', {}, true],
    ['booking.created', 'booking://42', { published: false }, true],
    ['webhook.test', 'webhook://test', null, true],
    ['booking.created', 'raw://anything', {}, false],
  ])('%s %s %j → %s', (type, subject, data, expected) => {
    expect(standaloneAdmits({ type, subject, data })).toBe(expected)
  })
})

describe('matchesSubjectGlob', () => {
  it.each([
    ['wiki://**', ARCH, true],
    ['wiki://**', 'wiki://a', true],
    ['wiki://**', 'blog://a', false],
    ['wiki://software/**', ARCH, true],
    ['wiki://software/**', 'wiki://softwareX/a', false],
    ['wiki://software/*', 'wiki://software/project', true],
    ['wiki://software/*', 'wiki://software/project/standmeet', false],
    ['wiki://software/*/standmeet/*', ARCH, true],
    ['wiki://software/*/architecture', ARCH, false],
    ['wiki://**/architecture', ARCH, true],
    ['wiki://**/architecture', 'wiki://architecture', false],
    ['wiki://software/project/stand*/arch*', ARCH, true],
    ['wiki://software/project/*meet/*', ARCH, true],
    ['wiki://software/project/*x/*', ARCH, false],
    ['wiki://***', ARCH, true],
    [ARCH, ARCH, true],
    [ARCH, ARCH + '/x', false],
    [ARCH + '/**', ARCH, false],
    ['wiki://Software/**', ARCH, false],
    ['wiki://software/?roject/**', ARCH, false],
    ['wiki://software/[p]roject/**', 'wiki://software/[p]roject/x', true],
    ['**', ARCH, true],
    ['*', ARCH, false],
    ['*', 'note-1', true],
    ['', '', false],
    ['', ARCH, false],
  ])('%j vs %j → %s', (glob, subject, expected) => {
    expect(matchesSubjectGlob(glob, subject)).toBe(expected)
  })

  it('refuses over-long globs and subjects', () => {
    expect(matchesSubjectGlob('*'.repeat(SUBJECT_GLOB_MAX_LENGTH + 1), 'a')).toBe(false)
    expect(matchesSubjectGlob('**', 'a'.repeat(SUBJECT_MAX_LENGTH + 1))).toBe(false)
  })

  it('stays fast on a pathological glob (no backtracking blow-up)', () => {
    const glob = 'a*'.repeat(SUBJECT_GLOB_MAX_LENGTH / 2 - 1) + 'b'
    const subject = 'a'.repeat(SUBJECT_MAX_LENGTH)
    const started = performance.now()
    expect(matchesSubjectGlob(glob, subject)).toBe(false)
    expect(performance.now() - started).toBeLessThan(1000)
  })
})

describe('isCanonicalSubject', () => {
  it.each([
    [ARCH, true],
    ['note-1', true],
    ['wiki://a/b%20c', true],
    ['wiki://a/..b', true],
    ['', false],
    ['wiki://', false],
    ['wiki://a//b', false],
    ['wiki://a/b/', false],
    ['wiki:///a', false],
    ['wiki://a/./b', false],
    ['wiki://a/../private/x', false],
    ['wiki://a/%2e%2E/private', false],
    ['wiki://a\\b', false],
    ['wiki://a/b\nc', false],
    ['1wiki://a', false],
    ['w' + 'a'.repeat(SUBJECT_MAX_LENGTH), false],
  ])('%j → %s', (subject, expected) => {
    expect(isCanonicalSubject(subject)).toBe(expected)
  })
})

describe('allowsCorpusEntry / corpusEntryDenial', () => {
  const now = new Date('2026-05-01T12:00:00Z')
  const before = new Date('2026-05-01T11:59:59Z')
  const after = new Date('2026-05-01T12:00:01Z')
  const code = (over: Partial<AccessCode> = {}): AccessCode => ({
    role_globs: ['wiki://software/**'],
    deny_globs: ['wiki://software/private/**'],
    reads_published_slice: false,
    revoked_at: null,
    expires_at: null,
    ...over,
  })
  const entry = (over: Partial<CorpusEntry> = {}): CorpusEntry => ({
    subject: ARCH,
    published: false,
    was_published: false,
    ...over,
  })

  it.each<[string, AccessCode, CorpusEntry, string | null]>([
    ['in role, not denied', code(), entry(), null],
    ['revoked in the past', code({ revoked_at: before }), entry(), 'revoked'],
    ['revoked exactly now', code({ revoked_at: now }), entry(), 'revoked'],
    ['revocation scheduled later', code({ revoked_at: after }), entry(), null],
    ['revoked date unreadable', code({ revoked_at: new Date('nope') }), entry(), 'revoked'],
    ['expired in the past', code({ expires_at: before }), entry(), 'expired'],
    ['expires exactly now', code({ expires_at: now }), entry(), 'expired'],
    ['expires later', code({ expires_at: after }), entry(), null],
    [
      'raw subject even under a catch-all role',
      code({ role_globs: ['**'], deny_globs: [] }),
      entry({ subject: 'raw://inbox/1', published: true }),
      'raw_subject',
    ],
    [
      'dot-segment escape',
      code({ role_globs: ['wiki://**'], deny_globs: ['wiki://software/private/**'] }),
      entry({ subject: 'wiki://software/x/../private/secret' }),
      'noncanonical_subject',
    ],
    [
      'outside every role glob',
      code(),
      entry({ subject: 'wiki://personal/diary' }),
      'outside_role',
    ],
    ['no role globs at all', code({ role_globs: [] }), entry(), 'outside_role'],
    [
      'denied by glob',
      code(),
      entry({ subject: 'wiki://software/private/keys', published: true }),
      'denied_by_glob',
    ],
    [
      'second role glob admits',
      code({ role_globs: ['blog://**', 'wiki://software/project/*/architecture'] }),
      entry(),
      null,
    ],
    ['published slice, unpublished', code({ reads_published_slice: true }), entry(), 'unpublished'],
    [
      'published slice, published',
      code({ reads_published_slice: true }),
      entry({ published: true }),
      null,
    ],
    [
      'published slice, was published (un-publish is heard)',
      code({ reads_published_slice: true }),
      entry({ was_published: true }),
      null,
    ],
    [
      'published slice does not rescue a denied subject',
      code({ reads_published_slice: true }),
      entry({ subject: 'wiki://software/private/a', published: true }),
      'denied_by_glob',
    ],
  ])('%s', (_name, accessCode, corpusEntry, expected) => {
    expect(corpusEntryDenial(accessCode, corpusEntry, now)).toBe(expected)
    expect(allowsCorpusEntry(accessCode, corpusEntry, now)).toBe(expected === null)
  })

  it('refuses everything when "now" is unreadable and the code has a deadline', () => {
    expect(allowsCorpusEntry(code({ expires_at: after }), entry(), new Date(Number.NaN))).toBe(
      false,
    )
  })
})

describe('corpusEntryFromEvent', () => {
  it.each<[unknown, boolean, boolean]>([
    [{ published: true, was_published: false }, true, false],
    [{ published: false, was_published: true }, false, true],
    [{ published: 'yes' }, false, false],
    [null, false, false],
  ])('%j → published=%s was_published=%s', (data, published, wasPublished) => {
    expect(corpusEntryFromEvent({ type: NOTE, subject: ARCH, data })).toEqual({
      subject: ARCH,
      published,
      was_published: wasPublished,
    })
  })
})

describe('decideScope', () => {
  const event = (type: string, subject: string, data: unknown) => ({ type, subject, data })
  const pub = { published: true, was_published: false }
  const unpub = { published: false, was_published: false }
  const wasPub = { published: false, was_published: true }

  it.each<[string, ScopeInput, ReturnType<typeof decideScope>]>([
    [
      'standalone, published note',
      { event: event(NOTE, ARCH, pub), endpointEmbedId: null, embedAdmits: null },
      { admitted: true },
    ],
    [
      'standalone, un-published note (was_published)',
      { event: event(NOTE, ARCH, wasPub), endpointEmbedId: null, embedAdmits: null },
      { admitted: true },
    ],
    [
      'standalone, private note',
      { event: event(NOTE, ARCH, unpub), endpointEmbedId: null, embedAdmits: null },
      { admitted: false, reason: 'unpublished' },
    ],
    [
      'standalone ignores a stray port answer',
      { event: event(NOTE, ARCH, unpub), endpointEmbedId: null, embedAdmits: true },
      { admitted: false, reason: 'unpublished' },
    ],
    [
      'standalone, raw note',
      { event: event(NOTE, 'raw://x', pub), endpointEmbedId: null, embedAdmits: null },
      { admitted: false, reason: 'raw_subject' },
    ],
    [
      'embed admits an unpublished note',
      { event: event(NOTE, ARCH, unpub), endpointEmbedId: 'emb_1', embedAdmits: true },
      { admitted: true },
    ],
    [
      'embed refuses a published note',
      { event: event(NOTE, ARCH, pub), endpointEmbedId: 'emb_1', embedAdmits: false },
      { admitted: false, reason: 'embed_denied' },
    ],
    [
      'embed not asked',
      { event: event(NOTE, ARCH, pub), endpointEmbedId: 'emb_1', embedAdmits: null },
      { admitted: false, reason: 'embed_missing' },
    ],
    [
      'embed admits a raw note: still refused',
      { event: event(NOTE, 'raw://x', pub), endpointEmbedId: 'emb_1', embedAdmits: true },
      { admitted: false, reason: 'raw_subject' },
    ],
    [
      'other type, standalone',
      {
        event: event('booking.created', 'booking://1', {}),
        endpointEmbedId: null,
        embedAdmits: null,
      },
      { admitted: true },
    ],
    [
      'other type, embed endpoint, port not asked',
      {
        event: event('booking.created', 'booking://1', {}),
        endpointEmbedId: 'e',
        embedAdmits: null,
      },
      { admitted: true },
    ],
    [
      'other type, embed endpoint, port said no (irrelevant)',
      { event: event('code.issued', 'code://1', {}), endpointEmbedId: 'e', embedAdmits: false },
      { admitted: true },
    ],
    [
      'other type, raw subject',
      {
        event: event('vault.imported', 'raw://vault', {}),
        endpointEmbedId: null,
        embedAdmits: null,
      },
      { admitted: false, reason: 'raw_subject' },
    ],
  ])('%s', (_name, input, expected) => {
    expect(decideScope(input)).toEqual(expected)
  })
})

describe('requiresEmbedScope', () => {
  it.each([
    [NOTE, ARCH, 'emb_1', true],
    [NOTE, ARCH, null, false],
    [NOTE, 'raw://x', 'emb_1', false],
    ['booking.created', 'booking://1', 'emb_1', false],
  ])('%s %s embed=%s → %s', (type, subject, embedId, expected) => {
    expect(requiresEmbedScope({ type, subject, data: {} }, embedId)).toBe(expected)
  })
})
