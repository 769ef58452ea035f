// A throwaway certificate authority made with Debian's openssl CLI (argument arrays, no shell):
// for Pebble's own HTTPS listener and for "uploaded" certificates in tests.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const run = promisify(execFile);

export interface TestCa {
  dir: string;
  certPath: string;
  keyPath: string;
  certPem: string;
}

export interface IssuedCert {
  certPem: string;
  keyPem: string;
  certPath: string;
  keyPath: string;
}

let serial = 0;

export async function makeCa(dir: string, name = 'svc test CA'): Promise<TestCa> {
  const keyPath = join(dir, `${name.replace(/\W+/g, '-')}.key`);
  const certPath = join(dir, `${name.replace(/\W+/g, '-')}.pem`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyPath,
    '-out',
    certPath,
    '-days',
    '3',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { dir, certPath, keyPath, certPem: await readFile(certPath, 'utf8') };
}

/** A leaf for `names` (DNS names or IPs), signed by `ca`. */
export async function issue(
  ca: TestCa,
  names: string[],
  opts: { days?: number; file?: string } = {},
): Promise<IssuedCert> {
  const base = join(ca.dir, opts.file ?? `leaf-${process.pid}-${++serial}`);
  const keyPath = `${base}.key`;
  const csrPath = `${base}.csr`;
  const certPath = `${base}.pem`;
  const extPath = `${base}.ext`;
  const san = names.map((n) => (/^[\d.]+$/.test(n) || n.includes(':') ? `IP:${n}` : `DNS:${n}`)).join(',');
  await writeFile(extPath, `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  await run('openssl', [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyPath,
    '-out',
    csrPath,
    '-subj',
    `/CN=${names[0]}`,
  ]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csrPath,
    '-CA',
    ca.certPath,
    '-CAkey',
    ca.keyPath,
    '-set_serial',
    String(Date.now() * 1000 + serial),
    '-out',
    certPath,
    '-days',
    String(opts.days ?? 2),
    '-extfile',
    extPath,
  ]);
  return {
    certPem: await readFile(certPath, 'utf8'),
    keyPem: await readFile(keyPath, 'utf8'),
    certPath,
    keyPath,
  };
}
