// The `svc` command as a client of a remote instance: where it is and the token it presents
// (~/.config/svc/credentials.json, mode 0600, written by `svc login`; SVC_URL and SVC_TOKEN
// override it), the typed client (client/) over them, and the few helpers every client command
// shares: an app named by its name, an API error as one line.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createClient, type SvcClient } from '../../client/index.js';
import { CliFailure } from './parser.js';

export interface Credentials {
  url: string;
  token: string;
}

export function credentialsPath(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'svc', 'credentials.json');
}

async function stored(): Promise<Partial<Credentials>> {
  try {
    const v = JSON.parse(await readFile(credentialsPath(), 'utf8')) as Partial<Credentials>;
    return {
      url: typeof v.url === 'string' ? v.url : undefined,
      token: typeof v.token === 'string' ? v.token : undefined,
    };
  } catch {
    return {};
  }
}

/** Written whole, readable by its owner only (the directory too), then moved into place. */
export async function saveCredentials(c: Credentials): Promise<string> {
  const path = credentialsPath();
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(c, null, 2) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
  return path;
}

/** The instance's address without a trailing slash; refuses anything but http(s). */
export function normaliseUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CliFailure(
      `not an address: ${JSON.stringify(raw.slice(0, 100))} (give https://svc.example.com)`,
    );
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new CliFailure(`not an http(s) address: ${u.protocol}`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** Where to connect and with which token: SVC_URL and SVC_TOKEN, else the credentials file. */
export async function credentials(): Promise<Credentials> {
  const file = await stored();
  const url = process.env.SVC_URL || file.url;
  const token = process.env.SVC_TOKEN || file.token;
  if (!url || !token)
    throw new CliFailure('not logged in: run `svc login <url>`, or set SVC_URL and SVC_TOKEN');
  return { url: normaliseUrl(url), token };
}

export interface Remote {
  api: SvcClient;
  url: string;
  token: string;
}

export async function remote(): Promise<Remote> {
  const c = await credentials();
  return { api: createClient(c.url, { token: c.token }), ...c };
}

/** The API's answer or a failure naming what went wrong (its error line, or the status). */
export function must<T>(r: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (r.response.ok && r.data !== undefined) return r.data;
  const e = r.error as { error?: string; details?: Array<{ field: string; message: string }> } | undefined;
  const details = e?.details?.length
    ? ` (${e.details.map((d) => `${d.field}: ${d.message}`).join('; ')})`
    : '';
  throw new CliFailure(`${what}: ${e?.error ?? `HTTP ${r.response.status}`}${details}`);
}

/** The id of the app named `name` (an exact name; an id is accepted too). */
export async function appId(api: SvcClient, name: string): Promise<string> {
  const page = must(
    await api.GET('/api/apps', { params: { query: { q: name, limit: 500 } } }),
    'listing apps',
  );
  const hit = page.items.find((a) => a.name === name || a.id === name);
  if (!hit) throw new CliFailure(`no app named ${JSON.stringify(name)}`);
  return hit.id;
}

/** Network failures as one line (the address and the reason), not a stack. */
export async function reach<T>(url: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof TypeError && /fetch failed/.test(e.message))
      throw new CliFailure(`cannot reach ${url}: ${(e.cause as Error | undefined)?.message ?? e.message}`);
    throw e;
  }
}
