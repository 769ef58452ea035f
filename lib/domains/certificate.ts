// Certificates: what Caddy serves for a name (learned the way a visitor learns it, by a TLS
// handshake with that name as SNI), and the checks an uploaded certificate must pass.
import { connect } from 'node:tls';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { badRequest } from '../http/errors.js';

export interface CertificateInfo {
  issuer: string;
  subject: string;
  not_before: string;
  not_after: string;
  fingerprint256: string;
  /** Subject alternative names as the certificate lists them. */
  names: string[];
}

export interface ProbeResult {
  /** The certificate served for the name, when one is served and covers it. */
  cert: CertificateInfo | null;
  error?: string;
}

export interface ProbeOptions {
  /** Where Caddy's HTTPS listener is reachable from the control plane. */
  address: string;
  port: number;
  timeoutMs?: number;
}

export type CertificateProber = (hostname: string) => Promise<ProbeResult>;

function field(dn: string, key: string): string | undefined {
  for (const line of dn.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0 && line.slice(0, eq) === key) return line.slice(eq + 1);
  }
  return undefined;
}

/** "Let's Encrypt R3" rather than a distinguished name spread over lines. */
function issuerName(dn: string): string {
  const cn = field(dn, 'CN');
  const o = field(dn, 'O');
  if (cn && o && !cn.includes(o)) return `${o} ${cn}`;
  return cn ?? o ?? dn.replace(/\n/g, ', ');
}

function names(x: X509Certificate): string[] {
  return (x.subjectAltName ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4));
}

export function describe(x: X509Certificate): CertificateInfo {
  return {
    issuer: issuerName(x.issuer),
    subject: field(x.subject, 'CN') ?? x.subject.replace(/\n/g, ', '),
    not_before: new Date(x.validFrom).toISOString(),
    not_after: new Date(x.validTo).toISOString(),
    fingerprint256: x.fingerprint256,
    names: names(x),
  };
}

export function createCertificateProber(opts: ProbeOptions): CertificateProber {
  return (hostname) =>
    new Promise((resolve) => {
      let done = false;
      const finish = (r: ProbeResult) => {
        if (done) return;
        done = true;
        socket.destroy();
        resolve(r);
      };
      // Not verified here on purpose: the point is to see what is served, whoever issued it.
      const socket = connect({
        host: opts.address,
        port: opts.port,
        servername: hostname,
        rejectUnauthorized: false,
        ALPNProtocols: ['http/1.1'],
      });
      socket.setTimeout(opts.timeoutMs ?? 5_000, () =>
        finish({ cert: null, error: 'the proxy did not complete a TLS handshake in time' }),
      );
      socket.once('secureConnect', () => {
        const x = socket.getPeerX509Certificate();
        if (!x) return finish({ cert: null, error: 'no certificate is served for this name yet' });
        if (x.checkHost(hostname) === undefined)
          return finish({ cert: null, error: `the certificate served does not cover ${hostname}` });
        finish({ cert: describe(x) });
      });
      socket.once('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ECONNREFUSED')
          return finish({ cert: null, error: `the proxy's HTTPS port (${opts.port}) is not listening` });
        // Caddy ends the handshake with an alert when it holds no certificate for the name.
        finish({ cert: null, error: 'no certificate is served for this name yet' });
      });
    });
}

export interface ValidatedCertificate {
  /** The chain, re-encoded: leaf first. */
  cert_pem: string;
  /** The key, re-encoded as unencrypted PKCS#8. */
  key_pem: string;
  info: CertificateInfo;
}

const MAX_CERT_PEM = 64 * 1024;
const MAX_KEY_PEM = 16 * 1024;
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function refuse(field: 'cert_pem' | 'key_pem', message: string): never {
  throw badRequest(message, [{ field, message }]);
}

/**
 * An uploaded certificate must be a chain whose leaf matches the key, covers the hostname and
 * is valid now. Anything else is refused with the reason, and nothing is stored.
 */
export function validateCertificate(
  certPem: unknown,
  keyPem: unknown,
  hostname: string,
  now = Date.now(),
): ValidatedCertificate {
  if (typeof certPem !== 'string' || certPem.trim() === '')
    refuse('cert_pem', 'cert_pem must be a PEM certificate');
  if (typeof keyPem !== 'string' || keyPem.trim() === '')
    refuse('key_pem', 'key_pem must be a PEM private key');
  if (certPem.length > MAX_CERT_PEM) refuse('cert_pem', `cert_pem is larger than ${MAX_CERT_PEM / 1024} KiB`);
  if (keyPem.length > MAX_KEY_PEM) refuse('key_pem', `key_pem is larger than ${MAX_KEY_PEM / 1024} KiB`);
  const blocks = certPem.match(PEM_CERT) ?? [];
  if (blocks.length === 0)
    refuse('cert_pem', 'cert_pem holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  if (blocks.length > 10) refuse('cert_pem', 'cert_pem holds more than 10 certificates');
  const chain: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      chain.push(new X509Certificate(b));
    } catch {
      refuse('cert_pem', 'cert_pem holds a certificate that cannot be parsed');
    }
  }
  const leaf = chain[0]!;
  if (leaf.ca)
    refuse(
      'cert_pem',
      'the first certificate is a CA certificate; put the certificate for the host first, then its intermediates',
    );
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!chain[i]!.checkIssued(chain[i + 1]!))
      refuse(
        'cert_pem',
        `certificate ${i + 2} of the chain did not issue certificate ${i + 1}; list the chain leaf first, in order`,
      );
  }
  if (/ENCRYPTED/.test(keyPem))
    refuse('key_pem', 'the private key is encrypted; upload it without a passphrase');
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: keyPem, format: 'pem' });
  } catch {
    refuse('key_pem', 'key_pem is not a PEM private key');
  }
  if (!leaf.checkPrivateKey(key)) refuse('key_pem', 'the private key does not match the certificate');
  if (leaf.checkHost(hostname) === undefined) {
    const covered = names(leaf);
    refuse(
      'cert_pem',
      `the certificate does not cover ${hostname}${covered.length ? ` (it covers ${covered.slice(0, 10).join(', ')})` : ''}`,
    );
  }
  const info = describe(leaf);
  if (now < Date.parse(info.not_before))
    refuse('cert_pem', `the certificate is not valid before ${info.not_before}`);
  if (now >= Date.parse(info.not_after)) refuse('cert_pem', `the certificate expired on ${info.not_after}`);
  return {
    cert_pem: chain.map((c) => c.toString()).join(''),
    key_pem: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    info,
  };
}
