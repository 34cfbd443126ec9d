import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { inclusionProof, merkleRoot, verifyInclusion } from './merkle-tree.js'

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return new Uint8Array(hash.digest())
}
const leafHash = (data: Uint8Array) => sha256(Uint8Array.of(0), data)
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const flipBit = (bytes: Uint8Array, bit = 0) => {
  const copy = Uint8Array.from(bytes)
  copy[bit >> 3] = (copy[bit >> 3] as number) ^ (1 << (bit & 7))
  return copy
}

// The RFC 6962 §2.1 definitions transcribed literally (recursive, slicing), as the reference
// the iterative code is checked against.
const largestPowerOfTwoBelow = (n: number) => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}
function referenceRoot(d: readonly Uint8Array[]): Uint8Array {
  if (d.length === 0) return sha256()
  if (d.length === 1) return d[0] as Uint8Array
  const k = largestPowerOfTwoBelow(d.length)
  return sha256(Uint8Array.of(1), referenceRoot(d.slice(0, k)), referenceRoot(d.slice(k)))
}
function referencePath(m: number, d: readonly Uint8Array[]): Uint8Array[] {
  if (d.length <= 1) return []
  const k = largestPowerOfTwoBelow(d.length)
  return m < k
    ? [...referencePath(m, d.slice(0, k)), referenceRoot(d.slice(k))]
    : [...referencePath(m - k, d.slice(k)), referenceRoot(d.slice(0, k))]
}

const leavesOf = (n: number) =>
  Array.from({ length: n }, (_, i) => leafHash(Buffer.from(`leaf ${i}`, 'utf8')))

/** The certificate-transparency reference test data: 8 leaf inputs and the root of each prefix. */
const CT_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f']
const CT_ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
]

describe('merkleRoot', () => {
  it('of the empty tree is SHA-256 of the empty string', () => {
    expect(hex(merkleRoot([]))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  })

  it('of one leaf is that leaf', () => {
    const [leaf] = leavesOf(1)
    expect(merkleRoot([leaf as Uint8Array])).toEqual(leaf)
  })

  it.each(CT_ROOTS.map((root, i) => [i + 1, root] as const))(
    'matches the certificate-transparency vector for %i leaves',
    (n, root) => {
      const leaves = CT_INPUTS.slice(0, n).map((input) => leafHash(Buffer.from(input, 'hex')))
      expect(hex(merkleRoot(leaves))).toBe(root)
      expect(hex(referenceRoot(leaves))).toBe(root)
    },
  )

  it('a hand-computed 3-leaf tree: H(1 ‖ H(1 ‖ a ‖ b) ‖ c)', () => {
    const [a, b, c] = leavesOf(3) as [Uint8Array, Uint8Array, Uint8Array]
    const expected = sha256(Uint8Array.of(1), sha256(Uint8Array.of(1), a, b), c)
    expect(merkleRoot([a, b, c])).toEqual(expected)
    expect(inclusionProof([a, b, c], 2)).toEqual([sha256(Uint8Array.of(1), a, b)])
    expect(inclusionProof([a, b, c], 0)).toEqual([b, c])
  })

  it.each(Array.from({ length: 40 }, (_, i) => i))('equals the RFC recursion for %i leaves', (n) => {
    const leaves = leavesOf(n)
    expect(hex(merkleRoot(leaves))).toBe(hex(referenceRoot(leaves)))
  })

  it('refuses a leaf that is not a 32-byte hash', () => {
    expect(() => merkleRoot([...leavesOf(2), new Uint8Array(31)])).toThrow(/leaf 2 is not a 32-byte hash/)
  })
})

describe('inclusionProof and verifyInclusion', () => {
  const sizes = Array.from({ length: 17 }, (_, i) => i + 1)

  it.each(sizes)('every index of a %i-leaf tree round-trips and equals the RFC PATH', (n) => {
    const leaves = leavesOf(n)
    const root = merkleRoot(leaves)
    for (let i = 0; i < n; i++) {
      const proof = inclusionProof(leaves, i)
      expect(proof.map(hex)).toEqual(referencePath(i, leaves).map(hex))
      expect(verifyInclusion(leaves[i] as Uint8Array, i, n, proof, root)).toBe(true)
    }
  })

  it.each(sizes)('in a %i-leaf tree, any flipped bit or wrong index fails', (n) => {
    const leaves = leavesOf(n)
    const root = merkleRoot(leaves)
    for (let i = 0; i < n; i++) {
      const leaf = leaves[i] as Uint8Array
      const proof = inclusionProof(leaves, i)
      expect(verifyInclusion(flipBit(leaf, 7 * i), i, n, proof, root)).toBe(false)
      expect(verifyInclusion(leaf, i, n, proof, flipBit(root, 255))).toBe(false)
      for (let p = 0; p < proof.length; p++) {
        const bad = proof.map((node, j) => (j === p ? flipBit(node, 100) : node))
        expect(verifyInclusion(leaf, i, n, bad, root)).toBe(false)
      }
      for (let j = 0; j < n; j++) {
        if (j !== i) expect(verifyInclusion(leaf, j, n, proof, root)).toBe(false)
      }
      // Another leaf's proof does not prove this one.
      if (n > 1) {
        const other = (i + 1) % n
        expect(verifyInclusion(leaf, i, n, inclusionProof(leaves, other), root)).toBe(false)
      }
    }
  })

  it.each<[string, (x: { leaf: Uint8Array; proof: Uint8Array[]; root: Uint8Array }) => Parameters<typeof verifyInclusion>]>([
    ['index = tree size', ({ leaf, proof, root }) => [leaf, 5, 5, proof, root]],
    ['negative index', ({ leaf, proof, root }) => [leaf, -1, 5, proof, root]],
    ['fractional index', ({ leaf, proof, root }) => [leaf, 0.5, 5, proof, root]],
    ['a smaller tree size', ({ leaf, proof, root }) => [leaf, 3, 4, proof, root]],
    // 6 or 8 would pass: a path of the same shape. The size is bound by the signed checkpoint.
    ['a larger tree size with a longer path', ({ leaf, proof, root }) => [leaf, 3, 9, proof, root]],
    ['a proof with one node too many', ({ leaf, proof, root }) => [leaf, 3, 5, [...proof, root], root]],
    ['a proof with one node missing', ({ leaf, proof, root }) => [leaf, 3, 5, proof.slice(1), root]],
    ['an empty proof', ({ leaf, root }) => [leaf, 3, 5, [], root]],
    ['a short proof node', ({ leaf, proof, root }) => [leaf, 3, 5, [proof[0]!.subarray(1), ...proof.slice(1)], root]],
    ['a short leaf', ({ leaf, proof, root }) => [leaf.subarray(0, 31), 3, 5, proof, root]],
    ['a short root', ({ leaf, proof, root }) => [leaf, 3, 5, proof, root.subarray(1)]],
  ])('fails on %s', (_name, build) => {
    const leaves = leavesOf(5)
    const args = build({ leaf: leaves[3] as Uint8Array, proof: inclusionProof(leaves, 3), root: merkleRoot(leaves) })
    expect(verifyInclusion(...args)).toBe(false)
  })

  it('the single-leaf tree: empty proof, root = leaf', () => {
    const [leaf] = leavesOf(1) as [Uint8Array]
    expect(inclusionProof([leaf], 0)).toEqual([])
    expect(verifyInclusion(leaf, 0, 1, [], leaf)).toBe(true)
  })

  it.each([[-1], [3], [1.5], [Number.NaN]])('inclusionProof refuses index %s of a 3-leaf tree', (index) => {
    expect(() => inclusionProof(leavesOf(3), index)).toThrow(RangeError)
  })
})
