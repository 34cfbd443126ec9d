import { IPv4, IPv6, Validator } from 'ip-num'

/**
 * The egress guard's policy (SPEC §6): which addresses a webhook may be delivered to. Pure: the
 * worker's transport asks it about every address it is about to connect to (after DNS, at connect
 * time), and endpoint create/update asks it about IP-literal URLs.
 */
export interface EgressPolicy {
  /** Decide for an address actually connected to (IPv4 dotted or IPv6 text, as from dns.lookup). */
  check(address: string): EgressDecision
}

/** The verdict for one address; `reason` names the range, e.g. `ipv4_mapped:private`. */
export type EgressDecision = { allowed: true } | { allowed: false; reason: string }

/** A problem with an endpoint URL, reported by {@link checkEndpointUrl}. */
export interface EndpointUrlProblem {
  code: 'invalid_url' | 'egress_blocked'
  message: string
}

type Family = 4 | 6

interface Address {
  readonly family: Family
  readonly value: bigint
}

interface Range {
  readonly family: Family
  readonly base: bigint
  readonly prefix: number
}

const WIDTH: Record<Family, number> = { 4: 32, 6: 128 }
const V4_MASK = 0xffff_ffffn
const ALLOWED: EgressDecision = Object.freeze({ allowed: true })
const MAX_URL_LENGTH = 2048

/**
 * Strict parse of an address as dns.lookup or `socket.remoteAddress` prints it. Non-canonical
 * IPv4 forms (`127.1`, `0x7f.0.0.1`, `010.0.0.1`) are refused rather than guessed at: whatever
 * does not parse is blocked as `invalid_address`, so leniency here could only open holes.
 */
function parseAddress(text: string): Address | null {
  if (text.length === 0 || text.length > 100) return null
  try {
    if (text.includes(':')) {
      // A zone id (fe80::1%eth0) does not change which range the address is in.
      const percent = text.indexOf('%')
      const bare = percent === -1 ? text : text.slice(0, percent)
      if (percent !== -1 && !/^[\w.-]+$/.test(text.slice(percent + 1))) return null
      if (!Validator.isValidIPv6String(bare)[0]) return null
      return { family: 6, value: IPv6.fromString(bare).getValue() }
    }
    if (!Validator.isValidIPv4String(text)[0]) return null
    return { family: 4, value: IPv4.fromDecimalDottedString(text).getValue() }
  } catch {
    return null
  }
}

/** Parses `a.b.c.d/n` or `x::/n`; null unless the prefix fits and no host bits are set. */
function parseCidr(text: string): Range | null {
  const match = /^([^/%\s]+)\/(\d{1,3})$/.exec(text)
  if (match === null) return null
  const [, addressText = '', prefixText = ''] = match
  const address = parseAddress(addressText)
  if (address === null) return null
  const prefix = Number(prefixText)
  const width = WIDTH[address.family]
  if (prefix > width || String(prefix) !== prefixText) return null
  // `10.0.0.1/8` is refused, not silently widened: the operator probably meant a /32.
  const hostMask = (1n << BigInt(width - prefix)) - 1n
  if ((address.value & hostMask) !== 0n) return null
  return { family: address.family, base: address.value, prefix }
}

function cidr(text: string): Range {
  const range = parseCidr(text)
  if (range === null) throw new Error(`egress-policy: bad built-in range ${text}`)
  return range
}

type Table = ReadonlyArray<readonly [Range, string]>

const table = (rows: ReadonlyArray<readonly [string, string]>): Table =>
  rows.map(([range, reason]) => [cidr(range), reason] as const)

function contains(range: Range, family: Family, value: bigint): boolean {
  if (range.family !== family) return false
  const shift = BigInt(WIDTH[family] - range.prefix)
  return value >> shift === range.base >> shift
}

/** Blocked IPv4 ranges, most specific first (255.255.255.255 sits inside 240/4). */
const V4_BLOCKED = table([
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'], // includes 169.254.169.254, the cloud metadata service
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments (incl. 192.0.0.192 metadata)
  ['192.0.2.0/24', 'documentation'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
])

/** Checked before the embeddings: both sit inside the IPv4-compatible ::/96 but mean themselves. */
const V6_SPECIAL = table([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
])

/** Blocked IPv6 ranges that carry no IPv4 address. */
const V6_BLOCKED = table([
  ['100::/64', 'discard'],
  ['2001:2::/48', 'benchmarking'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'], // RFC 9637
  ['fc00::/7', 'unique_local'], // includes fd00:ec2::254, the AWS IPv6 metadata service
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'site_local'], // deprecated, but some networks still route it privately
  ['ff00::/8', 'multicast'],
])

/** Only 2000::/3 is allocated as global unicast; anything else left over is refused. */
const V6_GLOBAL_UNICAST = cidr('2000::/3')

interface Embedding {
  readonly range: Range
  /** The IPv4 addresses the packet would really reach, each with a label for the reason. */
  readonly extract: (value: bigint) => ReadonlyArray<readonly [string, bigint]>
  /** Set when the prefix itself is not globally reachable, whatever it embeds. */
  readonly nonGlobal?: string
  /**
   * Whether an IPv4 allow-list entry admits this form too. Only for IPv4-mapped addresses, which
   * are the host's own IPv4 socket (`::ffff:127.0.0.1` is this machine's loopback). The others
   * reach their IPv4 address through a relay or tunnel somewhere else on the network (NAT64,
   * 6to4, Teredo) or through no standard path at all: an allowed `127.0.0.0/8` must not let
   * `64:ff9b::7f00:1` leave the host. They are admitted only by an IPv6 entry that covers them.
   */
  readonly inheritsIpv4Allow?: boolean
}

const low32 = (name: string) => (value: bigint) => [[name, value & V4_MASK] as const]

/**
 * IPv6 forms that carry an IPv4 address. The kernel (or a NAT64/6to4/Teredo relay) may deliver
 * to that IPv4 address, so it must pass the IPv4 rules.
 */
const EMBEDDINGS: readonly Embedding[] = [
  { range: cidr('::ffff:0:0/96'), extract: low32('ipv4_mapped'), inheritsIpv4Allow: true },
  { range: cidr('::ffff:0:0:0/96'), extract: low32('ipv4_translated') },
  { range: cidr('::/96'), extract: low32('ipv4_compatible') },
  { range: cidr('64:ff9b::/96'), extract: low32('nat64') },
  {
    // RFC 8215 local-use NAT64: the IPv4 position depends on the operator's prefix length, so
    // the whole /48 is refused; the reason still names a blocked IPv4 in the /96 position.
    range: cidr('64:ff9b:1::/48'),
    extract: low32('nat64'),
    nonGlobal: 'nat64_local',
  },
  {
    range: cidr('2002::/16'),
    extract: (value) => [['6to4', (value >> 80n) & V4_MASK]],
  },
  {
    // Teredo: server in bits 32-63, client (obfuscated) in the last 32 bits, XOR all-ones.
    range: cidr('2001::/32'),
    extract: (value) => [
      ['teredo', (value & V4_MASK) ^ V4_MASK],
      ['teredo_server', (value >> 64n) & V4_MASK],
    ],
  },
]

function classifyV4(value: bigint): string | null {
  for (const [range, reason] of V4_BLOCKED) if (contains(range, 4, value)) return reason
  return null
}

/**
 * Builds the policy. `allow` is an operator allow-list of CIDRs (IPv4 or IPv6) that admits
 * otherwise blocked addresses, e.g. `127.0.0.0/8` for tests on loopback. An allowed IPv4 range
 * also admits its IPv4-mapped form (`::ffff:127.0.0.1`), and no other IPv6 form embedding it
 * (NAT64, 6to4, Teredo, IPv4-compatible and -translated reach that IPv4 somewhere else).
 * @throws Error naming the first entry that is not a CIDR.
 */
export function createEgressPolicy(options: { allow: readonly string[] }): EgressPolicy {
  const allow = options.allow.map((entry) => {
    const range = parseCidr(entry.trim())
    if (range === null) {
      const hint = 'expected e.g. 10.0.0.0/8 or fd00::/8, with no host bits set'
      throw new Error(`egress allow-list: "${entry}" is not a CIDR (${hint})`)
    }
    return range
  })
  const admits = (family: Family, value: bigint) =>
    allow.some((range) => contains(range, family, value))

  function classifyV6(value: bigint): string | null {
    for (const [range, reason] of V6_SPECIAL) if (contains(range, 6, value)) return reason
    for (const embedding of EMBEDDINGS) {
      if (!contains(embedding.range, 6, value)) continue
      for (const [label, v4] of embedding.extract(value)) {
        const reason = classifyV4(v4)
        if (reason !== null && !(embedding.inheritsIpv4Allow === true && admits(4, v4))) return `${label}:${reason}`
      }
      return embedding.nonGlobal ?? null
    }
    for (const [range, reason] of V6_BLOCKED) if (contains(range, 6, value)) return reason
    return contains(V6_GLOBAL_UNICAST, 6, value) ? null : 'reserved'
  }

  function decide(address: string): EgressDecision {
    const parsed = parseAddress(address)
    if (parsed === null) return Object.freeze({ allowed: false, reason: 'invalid_address' })
    if (admits(parsed.family, parsed.value)) return ALLOWED
    const reason = parsed.family === 4 ? classifyV4(parsed.value) : classifyV6(parsed.value)
    return reason === null ? ALLOWED : Object.freeze({ allowed: false, reason })
  }

  // The transport asks about every request to an IP-literal URL and every connection: parsing
  // the text (ip-num's validators) was ~18 µs a delivery in the drain's profile. The decision
  // depends on the address alone, so the last few thousand are remembered.
  const decided = new Map<string, EgressDecision>()
  return Object.freeze({
    check(address: string): EgressDecision {
      let decision = decided.get(address)
      if (decision === undefined) {
        decision = decide(address)
        if (decided.size >= DECISIONS_REMEMBERED) decided.clear()
        decided.set(address, decision)
      }
      return decision
    },
  })
}

/** How many addresses' decisions one policy remembers (all forgotten at once when full). */
const DECISIONS_REMEMBERED = 4096

/**
 * Parses the operator allow-list from `HOOKLEDGER_EGRESS_ALLOW` (comma-separated CIDRs). Empty
 * or unset means no exceptions.
 * @throws Error(`HOOKLEDGER_EGRESS_ALLOW: "<entry>" is not a CIDR`) for a bad entry.
 */
export function parseEgressAllowList(text: string | undefined): string[] {
  if (text === undefined) return []
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  for (const entry of entries) {
    if (parseCidr(entry) === null) {
      throw new Error(`HOOKLEDGER_EGRESS_ALLOW: "${entry}" is not a CIDR`)
    }
  }
  return entries
}

/** A CIDR that admits `address` alone, for the hint in a refusal. */
function suggestedRange(address: string): string {
  return address.includes(':') ? `${address}/128` : `${address}/32`
}

/** The IP address a WHATWG-normalised hostname denotes, or null for a DNS name. */
function ipLiteral(hostname: string): string | null {
  if (hostname.startsWith('[') && hostname.endsWith(']')) return hostname.slice(1, -1)
  // WHATWG has already rewritten 2130706433, 0x7f.1, 127.1, 0177.0.0.1 to dotted decimal.
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname) ? hostname : null
}

/**
 * Validates an endpoint URL at create/update time. IP-literal hosts are checked against the policy
 * now; DNS names are allowed here and checked at connect time on the address actually connected
 * to (a name's records can change after validation).
 * @returns null when fine, else a problem whose message starts with the field name `url`.
 */
export function checkEndpointUrl(url: string, policy: EgressPolicy): EndpointUrlProblem | null {
  const invalid = (message: string): EndpointUrlProblem => ({
    code: 'invalid_url',
    message: `url: ${message}`,
  })
  if (url.length === 0) return invalid('is required')
  if (url.length > MAX_URL_LENGTH) return invalid(`is longer than ${MAX_URL_LENGTH} characters`)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return invalid('is not a valid absolute URL')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return invalid(`scheme must be http or https, not ${parsed.protocol.slice(0, -1)}`)
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return invalid('must not contain user info (user:password@)')
  }
  if (parsed.hostname === '') return invalid('has no host')
  // Normalisation may lengthen it (percent-encoding); the stored and sent form must fit too.
  if (parsed.href.length > MAX_URL_LENGTH) {
    return invalid(`is longer than ${MAX_URL_LENGTH} characters`)
  }
  const literal = ipLiteral(parsed.hostname)
  if (literal !== null) {
    const decision = policy.check(literal)
    if (!decision.allowed) {
      return {
        code: 'egress_blocked',
        // Says how to admit it: a receiver on loopback or a private network is a setting away,
        // and a CLI reads the setting from its own environment, not the service's.
        message: `url: address ${literal} is not allowed (${decision.reason}); to deliver there, add its range to HOOKLEDGER_EGRESS_ALLOW (e.g. ${suggestedRange(literal)}) where this runs`,
      }
    }
  }
  return null
}
