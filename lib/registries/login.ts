// The test call: a login against the registry's `/v2/` as the engine would make it. An anonymous
// `/v2/` answers 401 with a challenge: Basic (htpasswd registries) is answered with the
// credentials; Bearer (Docker Hub, forges) sends them to the token realm, whose token then opens
// `/v2/`. Every request goes through the self-hosted guard; a loopback registry is asked over
// plain HTTP when it has no TLS (the engine treats 127.0.0.0/8 as insecure too). The password is
// in no answer: only "authentication failed" and the registry's name.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { guardedGet, checkSelfHosted, OutboundRefused, type SelfHostedPolicy } from '../net/self-hosted.js';
import type { ResolvedAddress } from '../net/outbound.js';
import { ruleFor } from './hosts/index.js';
import { checkRegistryHost, hostPort } from './policy.js';

export interface LoginResult {
  ok: boolean;
  error?: string;
}

export interface LoginInput {
  host: string;
  username: string;
  password: string;
}

/** Where the engine reads a registry's own certificate authorities (`/etc/docker/certs.d/<host>`). */
export const ENGINE_CERTS_DIR = '/etc/docker/certs.d';

async function engineCas(host: string, dir: string): Promise<string[]> {
  try {
    const folder = join(dir, host);
    const names = (await readdir(folder)).filter((n) => n.endsWith('.crt'));
    return Promise.all(names.map((n) => readFile(join(folder, n), 'utf8')));
  } catch {
    return [];
  }
}

const isLoopback = (a: ResolvedAddress) => {
  const p = ipaddr.parse(a.address);
  const v4 =
    p.kind() === 'ipv6' && (p as ipaddr.IPv6).isIPv4MappedAddress() ? (p as ipaddr.IPv6).toIPv4Address() : p;
  return v4.range() === 'loopback';
};

interface Target {
  base: URL;
  address: ResolvedAddress;
  ca: string[];
}

/** The registry's `/v2/` base: https, or plain http for a loopback registry without TLS. */
async function reach(host: string, policy: SelfHostedPolicy, certsDir: string): Promise<Target> {
  const api = ruleFor(host).apiHost(host);
  const address = await checkRegistryHost(host, policy);
  const ca = await engineCas(host, certsDir);
  const https: Target = { base: new URL(`https://${api}/v2/`), address, ca };
  try {
    await guardedGet({ url: https.base, address, ca, timeoutMs: 5_000 });
    return https;
  } catch (e) {
    if (!isLoopback(address)) throw e;
    const { name, port } = hostPort(api);
    return { base: new URL(`http://${name}:${port === 443 ? 80 : port}/v2/`), address, ca };
  }
}

type Challenge = { scheme: 'basic' } | { scheme: 'bearer'; realm: string; service: string | null };

export function parseChallenge(header: string | string[] | undefined): Challenge | null {
  const h = (Array.isArray(header) ? header[0] : header) ?? '';
  if (/^basic\b/i.test(h)) return { scheme: 'basic' };
  if (!/^bearer\b/i.test(h)) return null;
  const param = (k: string) => new RegExp(`${k}="([^"]*)"`, 'i').exec(h)?.[1] ?? null;
  const realm = param('realm');
  return realm ? { scheme: 'bearer', realm, service: param('service') } : null;
}

const basic = (i: LoginInput) => `Basic ${Buffer.from(`${i.username}:${i.password}`).toString('base64')}`;

/** Logs in as the engine would; `ok: false` with a reason that never holds the password. */
export async function testLogin(
  input: LoginInput,
  policy: SelfHostedPolicy,
  certsDir = ENGINE_CERTS_DIR,
): Promise<LoginResult> {
  const failed: LoginResult = { ok: false, error: `registry ${input.host}: authentication failed` };
  try {
    const t = await reach(input.host, policy, certsDir);
    const first = await guardedGet({ url: t.base, address: t.address, ca: t.ca });
    if (first.status === 200) return { ok: true };
    const challenge = first.status === 401 ? parseChallenge(first.headers['www-authenticate']) : null;
    if (!challenge) return { ok: false, error: `registry ${input.host}: /v2/ answered ${first.status}` };
    const auth = challenge.scheme === 'basic' ? basic(input) : await bearer(challenge, input, policy, t.ca);
    if (!auth) return failed;
    const second = await guardedGet({
      url: t.base,
      address: t.address,
      ca: t.ca,
      headers: { authorization: auth },
    });
    if (second.status === 200) return { ok: true };
    if (second.status === 401 || second.status === 403) return failed;
    return { ok: false, error: `registry ${input.host}: /v2/ answered ${second.status}` };
  } catch (e) {
    const why =
      e instanceof OutboundRefused ? `refused: ${e.reason}` : `not reachable: ${(e as Error).message}`;
    return { ok: false, error: `registry ${input.host} ${why}`.split(input.password).join('***') };
  }
}

/** A token from the challenge's realm (itself a guarded address), as `Bearer <token>`; null: refused. */
async function bearer(
  c: Extract<Challenge, { scheme: 'bearer' }>,
  input: LoginInput,
  policy: SelfHostedPolicy,
  ca: string[],
): Promise<string | null> {
  const url = new URL(c.realm);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new OutboundRefused('the token realm is not an http(s) URL');
  if (c.service) url.searchParams.set('service', c.service);
  url.searchParams.set('account', input.username);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const address = await checkSelfHosted(url.hostname, port, policy);
  if (url.protocol === 'http:' && !isLoopback(address))
    throw new OutboundRefused('the token realm must use https');
  const r = await guardedGet({ url, address, ca, headers: { authorization: basic(input) } });
  if (r.status !== 200) return null;
  try {
    const body = JSON.parse(r.body) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    return token ? `Bearer ${token}` : null;
  } catch {
    return null;
  }
}
