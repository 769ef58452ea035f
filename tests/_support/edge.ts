// The edge's real components for tests, each its own process on free loopback ports:
// - Debian's `caddy`, started with nothing but an admin endpoint (as `caddy-api.service` would
//   be after a wipe), so everything it serves comes from the control plane;
// - Debian's `pebble`, an ACME CA validating HTTP-01 against Caddy's unprivileged HTTP port;
// - `pebble-challtestsrv` as the DNS server of both Pebble and the control plane's DNS check,
//   answering 127.0.0.1 for every name unless a test says otherwise.
// Pebble's HTTPS listener gets a certificate from a throwaway CA (Debian ships no test certs);
// that CA is SVC_ACME_CA_ROOT. Tests trust Pebble's issuing root, fetched from its management API.
// needEdge skips loudly without these programs, and fails under CI.
import { after, type TestContext } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { freePort, waitListening } from './net.js';
import { poll } from './wait.js';
import { makeCa, issue, type TestCa } from './pki.js';
import { edgeEnv } from './env.js';
import type { Services } from '#lib/http/handler.js';

export const edgeRequired = process.env.CI === 'true' || process.env.SVC_REQUIRE_EDGE === '1';
const PROGRAMS = ['/usr/bin/caddy', '/usr/bin/pebble', '/usr/bin/pebble-challtestsrv', '/usr/bin/openssl'];

export async function edgeUsable(): Promise<string | null> {
  for (const p of PROGRAMS) {
    try {
      await access(p, constants.X_OK);
    } catch {
      return `${p} is missing (Debian: apt-get install caddy pebble openssl)`;
    }
  }
  return null;
}

/** Call first: skips (loudly) without Caddy/Pebble, or fails under CI. */
export async function needEdge(t: TestContext): Promise<boolean> {
  const problem = await edgeUsable();
  if (!problem) return true;
  if (edgeRequired) throw new Error(`the edge cannot run here: ${problem}; CI requires it`);
  console.error(`\n*** SKIPPING ${t.name}: ${problem} ***\n`);
  t.skip(problem);
  return false;
}

interface Proc {
  child: ChildProcess;
  output(): string;
  /** Whole lines of its output seen so far that match `counted` (every line, not only the kept tail). */
  counted(): number;
  exited: Promise<void>;
}

function launch(cmd: string, args: string[], env: Record<string, string>, counted?: RegExp): Proc {
  const child = spawn(cmd, args, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let n = 0;
  const partial = { stdout: '', stderr: '' };
  const keep = (stream: 'stdout' | 'stderr') => (c: Buffer) => {
    const text = c.toString();
    out += text;
    if (out.length > 256 * 1024) out = out.slice(-128 * 1024);
    if (!counted) return;
    const lines = (partial[stream] + text).split('\n');
    partial[stream] = lines.pop() ?? '';
    for (const l of lines) if (counted.test(l)) n++;
  };
  child.stdout!.on('data', keep('stdout'));
  child.stderr!.on('data', keep('stderr'));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, output: () => out, counted: () => n, exited };
}

/**
 * Caddy 2.6 logs this once per config it loads (an identical config logs "config is unchanged"
 * instead), and every load closes the WebSockets open through it.
 */
const CADDY_LOAD_LINE = /"admin endpoint started"/;

async function stopProc(p: Proc | null, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill(signal);
  await p.exited;
}

export interface FetchResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The certificate Caddy presented (HTTPS only). */
  cert?: PeerCertificate;
  /** Whether the connection was a reused keep-alive one. */
  reused?: boolean;
}

export interface EdgeLab {
  dir: string;
  /** http://127.0.0.1:<port>, or unix//<dir>/admin.sock with the adminSocket option. */
  adminUrl: string;
  httpPort: number;
  httpsPort: number;
  dnsAddress: string;
  accessLog: string;
  /**
   * Caddy's certificate storage: Caddy 2.6's default place, `$XDG_DATA_HOME/caddy` (the lab sets
   * XDG_DATA_HOME), as on a host where the service's SVC_CADDY_STORAGE names Caddy's default.
   */
  caddyStorage: string;
  /** The CA behind Pebble's listener (SVC_ACME_CA_ROOT); also handy to sign uploads. */
  ca: TestCa;
  /** Pebble's issuing root: what a visitor must trust for ACME certificates. */
  pebbleRoot: string;
  /** The configuration variables that point the control plane at this lab. */
  vars: Record<string, string>;
  /** GET https://<host><path> through Caddy with real TLS (SNI = host), trusting Pebble's root and `ca`. */
  https(
    host: string,
    path?: string,
    opts?: { agent?: import('node:https').Agent | false; method?: string },
  ): Promise<FetchResult>;
  /** GET http://<host><path> through Caddy's HTTP port; redirects are not followed. */
  http(host: string, path?: string): Promise<FetchResult>;
  /** GET on Caddy's admin API (a fresh connection: Caddy restarts that server on every load). */
  admin(path: string): Promise<unknown>;
  /** Makes the mock DNS answer `addresses` for `host` (A records); `null` restores the default. */
  setA(host: string, addresses: string[] | null): Promise<void>;
  /** Kills Caddy (SIGKILL by default) and waits for it to be gone. */
  killCaddy(signal?: NodeJS.Signals): Promise<void>;
  /** Starts Caddy again with an empty config (the admin endpoint only), on the same storage and ports. */
  startCaddy(): Promise<void>;
  caddyOutput(): string;
  /** Configs Caddy loaded since the lab started (its log lines, across restarts of Caddy). */
  caddyLoads(): number;
  pebbleOutput(): string;
  stop(): Promise<void>;
}

/** Reads a response to its end: its status, headers and text. */
function received(
  res: IncomingMessage,
  done: (r: { status: number; headers: IncomingHttpHeaders; body: string }) => void,
): void {
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (c: string) => (body += c));
  res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
}

async function postJson(port: number, path: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

function get(url: URL, opts: { ca?: string | string[] } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const fn = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = fn(url, { agent: false, ca: opts.ca }, (res) => received(res, resolve));
    req.on('error', reject);
    req.end();
  });
}

export interface EdgeLabOptions {
  /** Caddy's admin endpoint on a unix socket in the lab's folder (unix//<dir>/admin.sock) instead of a loopback port. */
  adminSocket?: boolean;
}

export async function startEdgeLab(opts: EdgeLabOptions = {}): Promise<EdgeLab> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-edge-'));
  const adminSocket = opts.adminSocket ? join(dir, 'admin.sock') : null;
  const [adminPort, httpPort, httpsPort, acmePort, mgmtPort, tlsPort, dnsPort, dnsMgmtPort] =
    await Promise.all(Array.from({ length: 8 }, () => freePort()));
  let caddy: Proc | null = null;
  let pebble: Proc | null = null;
  let dns: Proc | null = null;
  try {
    const ca = await makeCa(dir, 'svc test pebble CA');
    const listener = await issue(ca, ['localhost', '127.0.0.1'], { file: 'pebble-listener' });
    const pebbleConfig = join(dir, 'pebble.json');
    await writeFile(
      pebbleConfig,
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${acmePort}`,
          managementListenAddress: `127.0.0.1:${mgmtPort}`,
          certificate: listener.certPath,
          privateKey: listener.keyPath,
          httpPort,
          tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: false,
        },
      }),
    );
    dns = launch(
      '/usr/bin/pebble-challtestsrv',
      [
        '-defaultIPv4',
        '127.0.0.1',
        '-defaultIPv6',
        '',
        '-dns01',
        `127.0.0.1:${dnsPort}`,
        '-http01',
        '',
        '-https01',
        '',
        '-tlsalpn01',
        '',
        '-management',
        `127.0.0.1:${dnsMgmtPort}`,
      ],
      {},
    );
    await waitListening(dnsMgmtPort, 30_000);
    pebble = launch('/usr/bin/pebble', ['-config', pebbleConfig, '-dnsserver', `127.0.0.1:${dnsPort}`], {
      PEBBLE_VA_NOSLEEP: '1',
      PEBBLE_WFE_NONCEREJECT: '0',
    });
    const pebbleRoot = await poll(
      'pebble management API',
      async () => {
        const r = await get(new URL(`https://127.0.0.1:${mgmtPort}/roots/0`), { ca: ca.certPem });
        return r.status === 200 && r.body.includes('BEGIN CERTIFICATE') ? r.body : null;
      },
      30_000,
      100,
    );
    await poll(
      'pebble ACME directory',
      async () =>
        (await get(new URL(`https://127.0.0.1:${acmePort}/dir`), { ca: ca.certPem })).status === 200,
      30_000,
      100,
    );

    const adminUrl = adminSocket ? `unix/${adminSocket}` : `http://127.0.0.1:${adminPort}`;
    // On the socket, Caddy 2.6 accepts only an empty Host header (see lib/proxy/caddy.ts).
    const adminGet = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const where = adminSocket
          ? { socketPath: adminSocket, setHost: false, headers: { host: '' } }
          : { host: '127.0.0.1', port: adminPort };
        const req = httpRequest({ ...where, path, agent: false }, (res) => received(res, resolve));
        req.on('error', reject);
        req.end();
      });
    const caddyHome = join(dir, 'caddy');
    await mkdir(join(caddyHome, 'data'), { recursive: true });
    await mkdir(join(caddyHome, 'config'), { recursive: true });
    const emptyConfig = join(dir, 'caddy-empty.json');
    await writeFile(
      emptyConfig,
      JSON.stringify({ admin: { listen: adminSocket ? `unix/${adminSocket}` : `127.0.0.1:${adminPort}` } }),
    );
    let earlierLoads = 0;
    const startCaddy = async () => {
      earlierLoads += (caddy as Proc | null)?.counted() ?? 0;
      caddy = launch(
        '/usr/bin/caddy',
        ['run', '--config', emptyConfig],
        {
          HOME: caddyHome,
          XDG_DATA_HOME: join(caddyHome, 'data'),
          XDG_CONFIG_HOME: join(caddyHome, 'config'),
        },
        CADDY_LOAD_LINE,
      );
      await poll(
        'caddy admin API',
        async () => (await adminGet('/config/').catch(() => ({ status: 0 }))).status === 200,
        30_000,
        100,
      );
    };
    await startCaddy();

    const accessLog = join(dir, 'logs', 'access.log');
    await mkdir(join(dir, 'logs'), { recursive: true });
    const trust = [pebbleRoot, ca.certPem];

    const https = (
      host: string,
      path = '/',
      opts: { agent?: import('node:https').Agent | false; method?: string } = {},
    ) =>
      new Promise<FetchResult>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: httpsPort,
            path,
            method: opts.method ?? 'GET',
            servername: host,
            headers: { host },
            ca: trust,
            agent: opts.agent ?? false,
          },
          (res) => {
            const cert = (res.socket as TLSSocket).getPeerCertificate?.();
            received(res, (r) => resolve({ ...r, cert, reused: req.reusedSocket }));
          },
        );
        req.on('error', (e) => reject(Object.assign(e, { reused: req.reusedSocket })));
        req.end();
      });
    const http = (host: string, path = '/') =>
      new Promise<FetchResult>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: httpPort, path, headers: { host }, agent: false },
          (res) => received(res, resolve),
        );
        req.on('error', reject);
        req.end();
      });

    return {
      dir,
      adminUrl,
      httpPort,
      httpsPort,
      dnsAddress: `127.0.0.1:${dnsPort}`,
      accessLog,
      caddyStorage: join(caddyHome, 'data', 'caddy'),
      ca,
      pebbleRoot,
      vars: {
        SVC_CADDY_ADMIN: adminUrl,
        SVC_PROXY_HTTP_PORT: String(httpPort),
        SVC_PROXY_HTTPS_PORT: String(httpsPort),
        SVC_ACME_CA: `https://127.0.0.1:${acmePort}/dir`,
        SVC_ACME_CA_ROOT: ca.certPath,
        SVC_ACME_EMAIL: 'ops@svc.test',
        SVC_DNS_RESOLVER: `127.0.0.1:${dnsPort}`,
        SVC_PUBLIC_IP: '127.0.0.1',
        SVC_ACCESS_LOG: accessLog,
        SVC_PROXY: 'on',
        SVC_PROXY_RESOLVER_PORT: '0',
      },
      https,
      http,
      async admin(path) {
        const r = await adminGet(path);
        if (r.status !== 200) throw new Error(`admin API answered ${r.status}: ${r.body}`);
        return JSON.parse(r.body);
      },
      async setA(host, addresses) {
        const status =
          addresses === null
            ? await postJson(dnsMgmtPort, '/clear-a', { host })
            : await postJson(dnsMgmtPort, '/add-a', { host, addresses });
        if (status !== 200) throw new Error(`challtestsrv answered ${status}`);
      },
      async killCaddy(signal = 'SIGKILL') {
        await stopProc(caddy, signal);
        earlierLoads += (caddy as Proc | null)?.counted() ?? 0;
        caddy = null;
      },
      startCaddy,
      caddyOutput: () => (caddy as Proc | null)?.output() ?? '',
      caddyLoads: () => earlierLoads + ((caddy as Proc | null)?.counted() ?? 0),
      pebbleOutput: () => (pebble as Proc | null)?.output() ?? '',
      async stop() {
        await stopProc(caddy);
        await stopProc(pebble);
        await stopProc(dns);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await stopProc(caddy);
    await stopProc(pebble);
    await stopProc(dns);
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

/**
 * One lab for a test file, started by the first test that asks for it; when the file ends, the
 * cleanups its tests pushed run (last first), then the lab stops. Call at the file's top level.
 */
export function labPerFile(opts: EdgeLabOptions = {}): {
  theLab(t: TestContext): Promise<EdgeLab | null>;
  cleanups: Array<() => Promise<unknown> | unknown>;
} {
  let lab: EdgeLab | null = null;
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
    await lab?.stop();
  });
  return {
    async theLab(t) {
      if (!(await needEdge(t))) return null;
      lab ??= await startEdgeLab(opts);
      return lab;
    },
    cleanups,
  };
}

/** A control plane pointed at the lab (see edgeEnv), its data folder in the lab's. */
export const labEnv = (t: TestContext, l: EdgeLab, vars: Record<string, string> = {}): Promise<Services> =>
  edgeEnv(t, { SVC_DATA_DIR: `${l.dir}/data`, ...l.vars, ...vars });
