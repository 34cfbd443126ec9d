import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** A certificate and its key, PEM. */
export interface TestKeyPair {
  readonly certificate: string
  readonly private_key: string
}

/** A certificate authority made for one test, and the certificates it issued. */
export interface TestCa {
  /** The CA's own certificate: what a receiver trusts for client certificates, and a client pins. */
  readonly ca: string
  /** A server certificate for 127.0.0.1 and `receiver.test`. */
  readonly server: TestKeyPair
  /** A client certificate (CN=hookledger-client). */
  readonly client: TestKeyPair
  /** Issues another certificate: `kind` decides its extended key usage. */
  issue(commonName: string, kind: 'client' | 'server'): TestKeyPair
  /** Removes the working folder. */
  dispose(): void
}

/**
 * Makes a throwaway CA with `openssl` (node:crypto makes no X.509; the transport's proxy tests
 * already use it, so it adds no dependency). EC P-256 keys, valid for one day: tests that need
 * an expired certificate advance the fake clock instead of minting one.
 */
export function createTestCa(name = 'hookledger test CA'): TestCa {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookledger-test-ca-'))
  const file = (f: string) => path.join(dir, f)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' })
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl('req', '-x509', ...ecKey, '-days', '1', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout', file('ca.key'), '-out', file('ca.pem'))
  let serial = 0
  const issue = (commonName: string, kind: 'client' | 'server'): TestKeyPair => {
    const base = `leaf-${++serial}`
    writeFileSync(file(`${base}.ext`), [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature',
      `extendedKeyUsage=${kind === 'server' ? 'serverAuth' : 'clientAuth'}`,
      ...(kind === 'server' ? ['subjectAltName=IP:127.0.0.1,DNS:receiver.test'] : []),
    ].join('\n'))
    openssl('req', '-new', ...ecKey, '-subj', `/CN=${commonName}`, '-keyout', file(`${base}.key`), '-out', file(`${base}.csr`))
    openssl('x509', '-req', '-in', file(`${base}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
      '-set_serial', String(1000 + serial), '-days', '1', '-extfile', file(`${base}.ext`), '-out', file(`${base}.pem`))
    return { certificate: readFileSync(file(`${base}.pem`), 'utf8'), private_key: readFileSync(file(`${base}.key`), 'utf8') }
  }
  return {
    ca: readFileSync(file('ca.pem'), 'utf8'),
    server: issue('receiver.test', 'server'),
    client: issue('hookledger-client', 'client'),
    issue,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  }
}
