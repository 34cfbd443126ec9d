import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { cosignerKeyId, cosignerVerifierKey, encodeSignerKey, isValidKeyName, noteSignerPublicKey, type NoteSigner, parseSignerKey } from '@hookledger/ledger'

/**
 * The witness's key file: one line, Go's signed-note secret key format
 * (golang.org/x/mod/sumdb/note, what `note.GenerateKey` writes),
 *
 *     PRIVATE+KEY+<name>+<key id>+<base64(0x01 ‖ 32-byte Ed25519 seed)>
 *
 * so the key can move to and from the Go tooling of the tlog ecosystem. The key ID in the file is
 * the plain Ed25519 one (type 0x01) that format defines; the witness signs cosignature/v1 (type
 * 0x04) with the same key, so its vkey, and the key ID in its signature lines, are the 0x04 ones
 * (`witnessVerifierKey`). The file is created with mode 0600, never overwritten, and refused
 * when group or others may read it (as ssh refuses such keys).
 */

export class WitnessKeyFileError extends Error {
  readonly code: 'exists' | 'unreadable' | 'malformed' | 'too_open' | 'invalid_name'
  constructor(code: WitnessKeyFileError['code'], message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'WitnessKeyFileError'
    this.code = code
  }
}

/** A witness key, as the operator hands it out: the vkey (type 0x04) and what it is made of. */
export interface WitnessKeyInfo {
  readonly name: string
  /** The cosigner key ID (type 0x04), lowercase hex: the one the witness's signature lines carry. */
  readonly keyId: string
  /** `<name>+<key id>+base64(0x04 ‖ public key)`: what a log operator adds to a policy. */
  readonly vkey: string
}

export function witnessKeyInfo(signer: NoteSigner): WitnessKeyInfo {
  return {
    name: signer.name,
    keyId: Buffer.from(cosignerKeyId(signer.name, noteSignerPublicKey(signer))).toString('hex'),
    vkey: cosignerVerifierKey(signer),
  }
}

/** A default key name: `witness-<8 random hex digits>` (a schema-less URL such as example.com/witness is better: --name). */
export function defaultWitnessKeyName(): string {
  return `witness-${randomBytes(4).toString('hex')}`
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? (error as Error).message

/**
 * Makes a new key named `name` and writes it to `file` (mode 0600; its directory is made if
 * missing, mode 0700). Throws WitnessKeyFileError `exists` when the file is there already.
 */
export async function createWitnessKeyFile(file: string, name: string = defaultWitnessKeyName()): Promise<{ signer: NoteSigner; info: WitnessKeyInfo }> {
  if (!isValidKeyName(name)) throw new WitnessKeyFileError('invalid_name', `${JSON.stringify(name)} is not a key name: no spaces, no "+", not empty`)
  const signer: NoteSigner = { name, seed: new Uint8Array(randomBytes(32)) }
  await mkdir(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 })
  let handle
  try {
    handle = await open(file, 'wx', 0o600)
  } catch (error) {
    if (codeOf(error) === 'EEXIST') throw new WitnessKeyFileError('exists', `${file} exists: a witness key is never overwritten (its vkey is in log operators' policies); choose another --key-file`)
    throw new WitnessKeyFileError('unreadable', `cannot create ${file} (${codeOf(error)})`, { cause: error })
  }
  try {
    await handle.writeFile(`${encodeSignerKey(signer)}\n`, 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
  return { signer, info: witnessKeyInfo(signer) }
}

/** Reads the key in `file`. Throws WitnessKeyFileError when it is missing, open to others, or not a key. */
export async function readWitnessKeyFile(file: string): Promise<NoteSigner> {
  let text: string
  try {
    const stats = await stat(file)
    if (process.platform !== 'win32' && (stats.mode & 0o077) !== 0) {
      throw new WitnessKeyFileError('too_open', `${file} may be read by others (mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')}): chmod 600 ${file}`)
    }
    text = await readFile(file, 'utf8')
  } catch (error) {
    if (error instanceof WitnessKeyFileError) throw error
    throw new WitnessKeyFileError('unreadable', `cannot read the witness key ${file} (${codeOf(error)})`, { cause: error })
  }
  try {
    return parseSignerKey(text.trim())
  } catch (error) {
    // The message never echoes the file: it is a secret.
    throw new WitnessKeyFileError('malformed', `${file} is not a witness key (expected PRIVATE+KEY+<name>+<key id>+<base64>)`, { cause: error })
  }
}
