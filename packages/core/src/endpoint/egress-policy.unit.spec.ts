import { describe, expect, it } from 'vitest'
import { checkEndpointUrl, createEgressPolicy, parseEgressAllowList } from './egress-policy.js'

const strict = createEgressPolicy({ allow: [] })

/** [address, reason it is blocked for with an empty allow-list, a CIDR that admits it] */
const BLOCKED: ReadonlyArray<readonly [string, string, string]> = [
  // IPv4, one or more per range
  ['0.0.0.0', 'unspecified', '0.0.0.0/8'],
  ['0.1.2.3', 'unspecified', '0.0.0.0/8'],
  ['10.0.0.1', 'private', '10.0.0.0/8'],
  ['10.255.255.255', 'private', '10.0.0.0/8'],
  ['100.64.0.1', 'cgnat', '100.64.0.0/10'],
  ['100.127.255.254', 'cgnat', '100.64.0.0/10'],
  ['127.0.0.1', 'loopback', '127.0.0.0/8'],
  ['127.255.255.254', 'loopback', '127.0.0.0/8'],
  ['169.254.169.254', 'link_local', '169.254.169.254/32'],
  ['169.254.0.1', 'link_local', '169.254.0.0/16'],
  ['172.16.0.1', 'private', '172.16.0.0/12'],
  ['172.31.255.255', 'private', '172.16.0.0/12'],
  ['192.0.0.192', 'reserved', '192.0.0.0/24'],
  ['192.0.2.1', 'documentation', '192.0.2.0/24'],
  ['192.168.1.1', 'private', '192.168.0.0/16'],
  ['198.18.0.1', 'benchmarking', '198.18.0.0/15'],
  ['198.19.255.255', 'benchmarking', '198.18.0.0/15'],
  ['198.51.100.7', 'documentation', '198.51.100.0/24'],
  ['203.0.113.9', 'documentation', '203.0.113.0/24'],
  ['224.0.0.1', 'multicast', '224.0.0.0/4'],
  ['239.255.255.250', 'multicast', '224.0.0.0/4'],
  ['240.0.0.1', 'reserved', '240.0.0.0/4'],
  ['255.255.255.255', 'broadcast', '255.255.255.255/32'],
  // IPv6 ranges
  ['::', 'unspecified', '::/128'],
  ['::1', 'loopback', '::1/128'],
  ['0:0:0:0:0:0:0:1', 'loopback', '::1/128'],
  ['fc00::1', 'unique_local', 'fc00::/7'],
  ['fd00:ec2::254', 'unique_local', 'fd00::/8'],
  ['fe80::1', 'link_local', 'fe80::/10'],
  ['fe80::1%eth0', 'link_local', 'fe80::/10'],
  ['FE80::ABCD', 'link_local', 'fe80::/10'],
  ['ff02::1', 'multicast', 'ff00::/8'],
  ['2001:db8::1', 'documentation', '2001:db8::/32'],
  ['100::1', 'discard', '100::/64'],
  ['fec0::1', 'site_local', 'fec0::/10'],
  ['4000::1', 'reserved', '4000::/2'],
  // IPv4 embedded in IPv6: the mapped form (the host's own IPv4 socket) is admitted by the IPv4
  // CIDR of the embedded address; the others only by an IPv6 CIDR that covers them
  ['::ffff:127.0.0.1', 'ipv4_mapped:loopback', '127.0.0.0/8'],
  ['::ffff:7f00:1', 'ipv4_mapped:loopback', '127.0.0.0/8'],
  ['0:0:0:0:0:ffff:a00:1', 'ipv4_mapped:private', '10.0.0.0/8'],
  ['::ffff:169.254.169.254', 'ipv4_mapped:link_local', '169.254.0.0/16'],
  ['::ffff:0.0.0.0', 'ipv4_mapped:unspecified', '0.0.0.0/8'],
  ['::ffff:0:10.0.0.1', 'ipv4_translated:private', '::ffff:0:0:0/96'],
  ['::127.0.0.1', 'ipv4_compatible:loopback', '::7f00:0/104'],
  ['::a00:1', 'ipv4_compatible:private', '::a00:0/104'],
  ['64:ff9b::127.0.0.1', 'nat64:loopback', '64:ff9b::/96'],
  ['64:ff9b::c0a8:101', 'nat64:private', '64:ff9b::/96'],
  ['64:ff9b:1::a00:1', 'nat64:private', '64:ff9b:1::/48'],
  ['64:ff9b:1::808:808', 'nat64_local', '64:ff9b:1::/48'],
  ['2002:7f00:1::', '6to4:loopback', '2002::/16'],
  ['2002:c0a8:101::1', '6to4:private', '2002::/16'],
  ['2002:a9fe:a9fe::', '6to4:link_local', '2002::/16'],
  // Teredo: client = last 32 bits XOR 0xffffffff (80ff:fffe -> 127.0.0.1), server = bits 32-63
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'teredo:loopback', '2001::/32'],
  ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'teredo:private', '2001::/32'],
  ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'teredo_server:private', '2001::/32'],
  // not an address at all
  ['localhost', 'invalid_address', '127.0.0.0/8'],
  ['127.1', 'invalid_address', '127.0.0.0/8'],
  ['0x7f.0.0.1', 'invalid_address', '127.0.0.0/8'],
  ['010.0.0.1', 'invalid_address', '10.0.0.0/8'],
  ['2130706433', 'invalid_address', '127.0.0.0/8'],
  ['256.0.0.1', 'invalid_address', '0.0.0.0/0'],
  ['1.2.3.4.5', 'invalid_address', '0.0.0.0/0'],
  [' 8.8.8.8', 'invalid_address', '0.0.0.0/0'],
  ['[::1]', 'invalid_address', '::/0'],
  ['1::2::3', 'invalid_address', '::/0'],
  ['', 'invalid_address', '::/0'],
]

const PUBLIC: readonly string[] = [
  '8.8.8.8',
  '1.1.1.1',
  '100.63.255.255', // just below CGNAT
  '100.128.0.0', // just above CGNAT
  '172.15.255.255',
  '172.32.0.0',
  '169.253.255.255',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '64:ff9b::8.8.8.8',
  '2002:808:808::1',
  '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, server 65.54.227.120, client 8.8.8.8
]

describe('EgressPolicy.check', () => {
  it.each(BLOCKED)('blocks %s as %s', (address, reason) => {
    expect(strict.check(address)).toEqual({ allowed: false, reason })
  })

  it.each(BLOCKED.filter(([, reason]) => reason !== 'invalid_address'))(
    'admits %s (%s) when the allow-list has %s',
    (address, _reason, allow) => {
      expect(createEgressPolicy({ allow: [allow] }).check(address)).toEqual({ allowed: true })
    },
  )

  it.each(BLOCKED.filter(([, reason]) => reason === 'invalid_address'))(
    'never admits the unparseable %s, whatever the allow-list',
    (address) => {
      const open = createEgressPolicy({ allow: ['0.0.0.0/0', '::/0'] })
      expect(open.check(address)).toEqual({ allowed: false, reason: 'invalid_address' })
    },
  )

  it.each(PUBLIC)('allows the public address %s', (address) => {
    expect(strict.check(address)).toEqual({ allowed: true })
  })

  it('answers the same for an address asked again, and past the remembered few thousand', () => {
    const policy = createEgressPolicy({ allow: ['127.0.0.1/32'] })
    const every = [...BLOCKED, ...PUBLIC.map((a) => [a] as const)]
    const first = every.map(([address]) => policy.check(address))
    // Enough other addresses to make the policy forget what it had decided (4,096).
    for (let i = 0; i < 5_000; i++) expect(policy.check(`8.8.${i >> 8}.${i & 255}`)).toEqual({ allowed: true })
    expect(every.map(([address]) => policy.check(address))).toEqual(first)
    expect(every.map(([address]) => policy.check(address))).toEqual(first)
    expect(policy.check('127.0.0.1')).toEqual({ allowed: true })
    expect(policy.check('127.0.0.2')).toEqual({ allowed: false, reason: 'loopback' })
  })

  it('admits only what the allow-list covers', () => {
    const policy = createEgressPolicy({ allow: ['127.0.0.1/32', '::1/128'] })
    expect(policy.check('127.0.0.1')).toEqual({ allowed: true })
    expect(policy.check('::ffff:127.0.0.1')).toEqual({ allowed: true })
    expect(policy.check('::1')).toEqual({ allowed: true })
    expect(policy.check('127.0.0.2')).toEqual({ allowed: false, reason: 'loopback' })
    expect(policy.check('::ffff:127.0.0.2')).toEqual({
      allowed: false,
      reason: 'ipv4_mapped:loopback',
    })
    expect(policy.check('10.0.0.1')).toEqual({ allowed: false, reason: 'private' })
  })

  it('admits an IPv6 literal range given in mapped form', () => {
    const policy = createEgressPolicy({ allow: ['::ffff:127.0.0.0/104'] })
    expect(policy.check('::ffff:127.0.0.9')).toEqual({ allowed: true })
    // The IPv6 range says nothing about the bare IPv4 address.
    expect(policy.check('127.0.0.9')).toEqual({ allowed: false, reason: 'loopback' })
  })

  it.each([
    ['64:ff9b::7f00:1', 'nat64:loopback'],
    ['64:ff9b::127.0.0.1', 'nat64:loopback'],
    ['2002:7f00:1::', '6to4:loopback'],
    ['2002:7f00:1:0:0:0:0:1', '6to4:loopback'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'teredo:loopback'],
    ['2001:0:7f00:1:8000:63bf:f7f7:f7f7', 'teredo_server:loopback'],
    ['::127.0.0.1', 'ipv4_compatible:loopback'],
    ['::7f00:2', 'ipv4_compatible:loopback'],
    ['::ffff:0:127.0.0.1', 'ipv4_translated:loopback'],
    ['::ffff:0:7f00:1', 'ipv4_translated:loopback'],
  ])('a loopback allow-list does not admit %s: it reaches 127.x somewhere else (%s)', (address, reason) => {
    // These ten forms passed a 127.0.0.0/8 allow-list, and their connects left the host.
    const loopback = createEgressPolicy({ allow: ['127.0.0.0/8'] })
    expect(loopback.check(address)).toEqual({ allowed: false, reason })
    expect(loopback.check('::ffff:127.0.0.1')).toEqual({ allowed: true })
  })

  it('blocks a Teredo address when either embedded address is blocked', () => {
    // client 8.8.8.8 is public, server 10.0.0.1 is not
    expect(strict.check('2001:0:a00:1:8000:63bf:f7f7:f7f7')).toEqual({ allowed: false, reason: 'teredo_server:private' })
  })
})

describe('createEgressPolicy', () => {
  it.each([
    '10.0.0.1/8',
    '10.0.0.0/33',
    '10.0.0.0',
    'fc00::/129',
    'fc00::1/7',
    'nope',
    '1.2.3.4/08',
    '::1/',
  ])('rejects the allow entry %s, naming it', (entry) => {
    expect(() => createEgressPolicy({ allow: [entry] })).toThrow(`"${entry}" is not a CIDR`)
  })

  it('accepts IPv4 and IPv6 CIDRs, surrounding spaces included', () => {
    expect(() =>
      createEgressPolicy({ allow: [' 10.0.0.0/8 ', '::/0', 'fd00::/8', '0.0.0.0/0'] }),
    ).not.toThrow()
  })
})

describe('parseEgressAllowList', () => {
  it('reads nothing from an unset or blank variable', () => {
    expect(parseEgressAllowList(undefined)).toEqual([])
    expect(parseEgressAllowList('')).toEqual([])
    expect(parseEgressAllowList('  ')).toEqual([])
  })

  it('splits, trims and skips empty entries', () => {
    expect(parseEgressAllowList(' 127.0.0.0/8, ::1/128 ,,10.0.0.0/8,')).toEqual([
      '127.0.0.0/8',
      '::1/128',
      '10.0.0.0/8',
    ])
  })

  it.each(['127.0.0.1', '10.0.0.1/8', 'localhost/8', '127.0.0.0/8;rm'])(
    'throws for the bad entry %s',
    (entry) => {
      expect(() => parseEgressAllowList(`::1/128, ${entry}`)).toThrow(
        new Error(`HOOKLEDGER_EGRESS_ALLOW: "${entry}" is not a CIDR`),
      )
    },
  )
})

describe('checkEndpointUrl', () => {
  /** [url, the address WHATWG normalises the host to, a CIDR that admits it] */
  const LITERALS: ReadonlyArray<readonly [string, string, string]> = [
    ['http://2130706433/', '127.0.0.1', '127.0.0.0/8'],
    ['http://0x7f.1/', '127.0.0.1', '127.0.0.0/8'],
    ['http://127.1/', '127.0.0.1', '127.0.0.0/8'],
    ['http://0177.0.0.1/hook', '127.0.0.1', '127.0.0.0/8'],
    ['http://127.0.0.1./', '127.0.0.1', '127.0.0.0/8'],
    ['https://%31%32%37.0.0.1/', '127.0.0.1', '127.0.0.0/8'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1', '127.0.0.0/8'],
    ['http://[::1]:8080/', '::1', '::1/128'],
    ['http://[::ffff:10.0.0.1]/', '::ffff:a00:1', '10.0.0.0/8'],
    ['https://10.1.2.3:8443/x?y=1', '10.1.2.3', '10.0.0.0/8'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254', '169.254.0.0/16'],
    ['http://0/', '0.0.0.0', '0.0.0.0/8'],
    ['http://[64:ff9b::10.0.0.1]/', '64:ff9b::a00:1', '64:ff9b::/96'],
  ]

  it.each(LITERALS)('refuses %s (%s) without an allow-list', (url, address) => {
    const problem = checkEndpointUrl(url, strict)
    expect(problem?.code).toBe('egress_blocked')
    expect(problem?.message).toMatch(/^url: /)
    expect(problem?.message).toContain(address)
    // It says how to admit it (the CLI reads the setting from its own shell).
    expect(problem?.message).toMatch(/add its range to HOOKLEDGER_EGRESS_ALLOW \(e\.g\. \S+\/(32|128)\) where this runs$/)
  })

  it.each(LITERALS)('accepts %s (%s) when the allow-list has %s', (url, _address, allow) => {
    expect(checkEndpointUrl(url, createEgressPolicy({ allow: [allow] }))).toBeNull()
  })

  it.each([
    'https://hooks.example.com/in',
    'http://example.com:8080/a?b=c#d',
    'https://8.8.8.8/',
    'https://[2606:4700:4700::1111]/',
    'http://localhost/', // a name: checked on the resolved address at connect time
  ])('accepts %s', (url) => {
    expect(checkEndpointUrl(url, strict)).toBeNull()
  })

  it.each([
    ['ftp://example.com/', /scheme/],
    ['javascript:alert(1)', /scheme/],
    ['file:///etc/passwd', /scheme/],
    ['https://user:pw@example.com/', /user info/],
    ['https://user@example.com/', /user info/],
    ['not a url', /not a valid/],
    ['/relative/path', /not a valid/],
    ['', /required/],
    ['http://[fe80::1%25eth0]/', /not a valid/],
    ['http://example.com:99999/', /not a valid/],
    [`https://example.com/${'a'.repeat(2048)}`, /longer than 2048/],
  ])('refuses %s as invalid_url', (url, message) => {
    const problem = checkEndpointUrl(url, strict)
    expect(problem?.code).toBe('invalid_url')
    expect(problem?.message).toMatch(/^url: /)
    expect(problem?.message).toMatch(message)
  })
})
