// The registry every node pulls app images from in cluster mode: the operator's (SVC_REGISTRY), or
// by default the control plane's own, provisioned on first use. That one runs as a container on the
// manager engine, serves TLS with a server certificate for the manager's advertise address, signed
// by a certificate authority the control plane made (its key 0600 in a 0700 folder of the data
// directory), keeps its storage in a named volume, and binds its port to the advertise address only.
// Engines trust it through /etc/docker/certs.d/<host:port>/ca.crt: the manager's is written here
// (the control plane runs on that host), every other node's by the join command (./join.ts).
// Certificates are made with the openssl command (argument arrays): node:crypto cannot issue them.
//
// It requires credentials: anonymous pulls and pushes are refused (401). One account, `svc`, with a
// random password made on first use and sealed in the database (lib/cluster/registry-store.ts); the
// registry gets its bcrypt hash in an htpasswd file (made by Debian's `htpasswd`, apache2-utils,
// the password on its standard input), put into the container like the certificate. The control
// plane pushes with it, hands it to Swarm with every service it creates or updates (the nodes'
// agents pull with it), and the join command logs a new node's engine in with it.
import { execFile } from 'node:child_process';
import { request } from 'node:https';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { X509Certificate } from 'node:crypto';
import type { Services } from '../http/handler.js';
import { ensurePrivateDir } from '../util/private-dir.js';
import { lazyRequire } from '../util/lazy.js';
import { guard, isNotFound } from '../docker/engine.js';
import { ensureImage } from '../docker/pull.js';
import { isOwned, ownerLabels } from '../docker/owner.js';
import { unavailable } from '../http/errors.js';
import { randomBytes } from 'node:crypto';
import { REGISTRY_PASSWORD_BINDING } from '../crypto/bindings.js';
import { readSealedRegistryPassword, saveSealedRegistryPassword } from './registry-store.js';
import type TarStream from 'tar-stream';

const run = promisify(execFile);
const tar = lazyRequire<typeof TarStream>('tar-stream');

/** The official reference; SVC_IMAGE_MAP may point it at a mirror or a local image. */
export const REGISTRY_IMAGE = 'registry:2';
export const REGISTRY_PORT = 5000;
export const REGISTRY_CONTAINER = 'svc-registry';
export const REGISTRY_VOLUME = 'svc-registry-data';
/** Where engines look for a registry's certificate authority (read at each pull). */
export const ENGINE_CERTS_DIR = '/etc/docker/certs.d';
const TLS_DIR = '/etc/docker/registry/tls';
const HTPASSWD = '/etc/docker/registry/auth/htpasswd';
export const REGISTRY_USER = 'svc';
const AUTH_ENV = [
  'REGISTRY_AUTH=htpasswd',
  'REGISTRY_AUTH_HTPASSWD_REALM=svc cluster registry',
  `REGISTRY_AUTH_HTPASSWD_PATH=${HTPASSWD}`,
];
const READY_MS = 30_000;

export function registryDir(env: Services): string {
  return join(env.config.dataDir, 'cluster-registry');
}

/** The certificate authority engines must trust for the control plane's own registry (PEM). */
export async function registryCa(env: Services): Promise<string | null> {
  if (env.config.cluster.registry) return null;
  const path = join(registryDir(env), 'ca.crt');
  return existsSync(path) ? readFile(path, 'utf8') : null;
}

const provisioning = new WeakMap<object, Promise<string>>();

/**
 * `host:port` of the cluster registry: SVC_REGISTRY when set, else the control plane's own (made
 * and started the first time, checked and restarted if needed after that).
 */
export async function clusterRegistry(env: Services): Promise<string> {
  if (env.config.cluster.registry) return env.config.cluster.registry;
  const key = env.config as object;
  let p = provisioning.get(key);
  if (!p) {
    p = provision(env).finally(() => provisioning.delete(key));
    provisioning.set(key, p);
  }
  return p;
}

/** The own registry's address when it has been provisioned (no engine call, for instance info). */
export async function ownRegistryAddress(env: Services): Promise<string | null> {
  const path = join(registryDir(env), 'server.addr');
  return existsSync(path) ? (await readFile(path, 'utf8')).trim() : null;
}

/** The own registry's account: the password made and sealed on first use, the same ever after. */
export async function registryCredentials(
  env: Pick<Services, 'db' | 'sealer'>,
): Promise<{ username: string; password: string }> {
  let sealed = await readSealedRegistryPassword(env.db);
  if (sealed === null) {
    if (!env.sealer.available) env.sealer.seal('', ''); // the 503 that names the missing master key
    const fresh = env.sealer.seal(randomBytes(24).toString('base64url'), REGISTRY_PASSWORD_BINDING);
    sealed = await saveSealedRegistryPassword(env.db, fresh);
  }
  return { username: REGISTRY_USER, password: env.sealer.open(sealed, REGISTRY_PASSWORD_BINDING) };
}

/**
 * What a push, and every Swarm service, presents to the cluster registry: the own registry's
 * account, or nothing for an operator's SVC_REGISTRY (its access is the operator's to arrange).
 */
export async function registryAuth(
  env: Services,
): Promise<{ username: string; password: string; serveraddress: string } | Record<string, never>> {
  if (env.config.cluster.registry) return {};
  const serveraddress = await clusterRegistry(env);
  return { ...(await registryCredentials(env)), serveraddress };
}

/** `svc:<bcrypt>` for the password, by htpasswd with the password on its standard input. */
function htpasswdLine(password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'htpasswd',
      ['-niB', '-C', '10', '--', REGISTRY_USER],
      { timeout: 30_000 },
      (err, out) => {
        if (err)
          return reject(
            unavailable(
              (err as NodeJS.ErrnoException).code === 'ENOENT'
                ? 'the cluster registry needs the htpasswd command (Debian: apt-get install apache2-utils)'
                : `htpasswd failed: ${err.message}`,
            ),
          );
        const line = out.split('\n')[0]!.trim();
        if (!line.startsWith(`${REGISTRY_USER}:$2`))
          return reject(unavailable('htpasswd answered no bcrypt hash'));
        resolve(`${line}\n`);
      },
    );
    child.stdin?.end(password);
  });
}

async function advertiseAddr(env: Services): Promise<string> {
  const info = (await guard(env.engine, () => env.engine.docker.info())) as {
    Swarm?: { NodeAddr?: string; ControlAvailable?: boolean };
  };
  const addr = info.Swarm?.NodeAddr;
  if (!addr || !info.Swarm?.ControlAvailable)
    throw unavailable('the Docker engine is not a swarm manager: the cluster registry runs on a manager');
  return addr;
}

/** `[v6]:port` or `v4:port`, as engines write registry hosts. */
export function hostPort(addr: string, port: number): string {
  return addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`;
}

async function provision(env: Services): Promise<string> {
  const addr = await advertiseAddr(env);
  const host = hostPort(addr, REGISTRY_PORT);
  const { caPem, certPem, keyPem } = await ensureCertificates(env, addr);
  await trustOnThisHost(host, caPem);
  const files = { certPem, keyPem, htpasswd: await htpasswdLine((await registryCredentials(env)).password) };
  await ensureContainer(env, addr, files);
  await waitReady(host, caPem);
  await writeFile(join(registryDir(env), 'server.addr'), `${host}\n`, { mode: 0o600 });
  return host;
}

async function ensureCertificates(
  env: Services,
  addr: string,
): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const dir = registryDir(env);
  ensurePrivateDir(dir);
  const caKey = join(dir, 'ca.key');
  const caCrt = join(dir, 'ca.crt');
  if (!existsSync(caKey) || !existsSync(caCrt)) {
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${caKey}.tmp`,
      '-out',
      `${caCrt}.tmp`,
      '-days',
      '3650',
      '-subj',
      '/CN=svc cluster registry CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    await chmod(`${caKey}.tmp`, 0o600);
    await rename(`${caKey}.tmp`, caKey);
    await rename(`${caCrt}.tmp`, caCrt);
  }
  const caPem = await readFile(caCrt, 'utf8');
  const crt = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  if (!existsSync(crt) || !existsSync(key) || !certFits(await readFile(crt, 'utf8'), caPem, addr)) {
    const ext = join(dir, 'server.ext');
    const csr = join(dir, 'server.csr');
    await writeFile(
      ext,
      `subjectAltName=IP:${addr}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`,
      { mode: 0o600 },
    );
    await run('openssl', [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${key}.tmp`,
      '-out',
      csr,
      '-subj',
      `/CN=${addr}`,
    ]);
    await chmod(`${key}.tmp`, 0o600);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      caCrt,
      '-CAkey',
      caKey,
      '-set_serial',
      String(Date.now()),
      '-days',
      '825',
      '-extfile',
      ext,
      '-out',
      `${crt}.tmp`,
    ]);
    await rename(`${key}.tmp`, key);
    await rename(`${crt}.tmp`, crt);
  }
  return { caPem, certPem: await readFile(crt, 'utf8'), keyPem: await readFile(key, 'utf8') };
}

/** The server certificate names this address, comes from this CA and has a month left. */
function certFits(certPem: string, caPem: string, addr: string): boolean {
  try {
    const cert = new X509Certificate(certPem);
    return (
      cert.checkIP(addr) === addr &&
      cert.verify(new X509Certificate(caPem).publicKey) &&
      Date.parse(cert.validTo) - Date.now() > 30 * 86400_000
    );
  } catch {
    return false;
  }
}

async function trustOnThisHost(host: string, caPem: string): Promise<void> {
  const dir = join(ENGINE_CERTS_DIR, host);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await writeFile(join(dir, 'ca.crt'), caPem, { mode: 0o644 });
}

interface RegistryFiles {
  certPem: string;
  keyPem: string;
  htpasswd: string;
}

async function ensureContainer(env: Services, addr: string, files: RegistryFiles): Promise<void> {
  const docker = env.engine.docker;
  const image = env.config.imageMap[REGISTRY_IMAGE] ?? REGISTRY_IMAGE;
  await guard(env.engine, async () => {
    const existing = await docker
      .getContainer(REGISTRY_CONTAINER)
      .inspect()
      .catch((e) => (isNotFound(e) ? null : Promise.reject(e)));
    if (existing) {
      if (!isOwned(env.engine, 'container', existing.Id, existing.Config.Labels ?? {}))
        throw unavailable(`a container named ${REGISTRY_CONTAINER} exists that this instance did not create`);
      const bound = existing.HostConfig.PortBindings?.[`${REGISTRY_PORT}/tcp`]?.[0]?.HostIp;
      // One made before credentials were required has no auth settings: made again (the volume stays).
      const authed = AUTH_ENV.every((e) => (existing.Config.Env ?? []).includes(e));
      if (bound === addr && existing.Config.Image === image && authed) {
        // The certificate may have been renewed since: put the current one in before a start.
        if (!existing.State.Running) {
          await putFiles(env, existing.Id, files);
          await docker.getContainer(existing.Id).start();
        }
        return;
      }
      await docker.getContainer(existing.Id).remove({ force: true });
    }
    await ensureImage(env.engine, image);
    const c = await docker.createContainer({
      name: REGISTRY_CONTAINER,
      Image: image,
      Labels: { ...ownerLabels(env.engine), 'svc.role': 'registry' },
      Env: [
        `REGISTRY_HTTP_TLS_CERTIFICATE=${TLS_DIR}/server.crt`,
        `REGISTRY_HTTP_TLS_KEY=${TLS_DIR}/server.key`,
        ...AUTH_ENV,
      ],
      ExposedPorts: { [`${REGISTRY_PORT}/tcp`]: {} },
      HostConfig: {
        PortBindings: { [`${REGISTRY_PORT}/tcp`]: [{ HostIp: addr, HostPort: String(REGISTRY_PORT) }] },
        Mounts: [{ Type: 'volume', Source: REGISTRY_VOLUME, Target: '/var/lib/registry' }],
        RestartPolicy: { Name: 'unless-stopped' },
      },
    });
    await putFiles(env, c.id, files);
    await c.start();
  });
}

/** The server certificate, its key and the htpasswd file go into the container: no host path is shared. */
async function putFiles(env: Services, id: string, files: RegistryFiles): Promise<void> {
  const pack = tar().pack();
  pack.entry({ name: 'tls', type: 'directory', mode: 0o755 });
  pack.entry({ name: 'tls/server.crt', mode: 0o644 }, files.certPem);
  pack.entry({ name: 'tls/server.key', mode: 0o600 }, files.keyPem);
  pack.entry({ name: 'auth', type: 'directory', mode: 0o755 });
  pack.entry({ name: 'auth/htpasswd', mode: 0o600 }, files.htpasswd);
  pack.finalize();
  await env.engine.docker
    .getContainer(id)
    .putArchive(pack as unknown as NodeJS.ReadableStream, { path: '/etc/docker/registry' });
}

async function waitReady(host: string, caPem: string): Promise<void> {
  const until = Date.now() + READY_MS;
  let last = '';
  for (;;) {
    try {
      const status = await probe(host, caPem);
      // 401: it answers over trusted TLS and asks for the credentials (200 would be an open registry).
      if (status === 401) return;
      last = status === 200 ? 'status 200: it answers without credentials' : `status ${status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > until) throw unavailable(`the cluster registry at ${host} did not answer (${last})`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

function probe(host: string, caPem: string): Promise<number> {
  const m = /^\[?([^\]]+)\]?:(\d+)$/.exec(host)!;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: m[1], port: Number(m[2]), path: '/v2/', method: 'GET', ca: caPem, timeout: 3000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
