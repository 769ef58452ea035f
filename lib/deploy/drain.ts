// Draining: after a deployment's switch, the previous version of a service keeps running until the
// connections it still serves have ended, or its drain period (`drain_s`, default 30) has passed;
// then it is stopped and removed. New connections already go to the new version (the proxy's
// switch waits until Caddy took the new answer, and the service's network alias has moved).
//
// Its open connections are counted two ways, every 250 ms:
// - through the proxy: the requests Caddy has in flight to the container's addresses (its admin
//   API's upstream counts, which include every open WebSocket). Idle kept-alive connections Caddy
//   pools are not requests, and do not hold a container;
// - on the app's networks (another service of the app talking to it): the connections its
//   listening ports accepted from peers that are not the host, read from the kernel's table in
//   the container's network namespace (/proc/<pid>/net/tcp and tcp6). The host's own connections
//   (Caddy's pool, health probes) are left out. A control plane that cannot read that table (not
//   in the host's process namespace) counts the proxy's side only.
import { readFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { guard, type AppContainer, type Engine } from '../docker/index.js';

export interface DrainOptions {
  /** The service's drain period in seconds (0: retire at once). */
  seconds(service: string): number;
  /** Requests the proxy has in flight to any of these addresses; null when it cannot tell. */
  proxied(addresses: ReadonlySet<string>): Promise<number | null>;
  signal?: AbortSignal;
  log(line: string): void;
  pollMs?: number;
}

/**
 * A client on the app's network that looked the service's name up just before it moved to the new
 * container connects to the old one a moment later: the old one waits this long (at most its
 * drain period) even when nothing is open, and such a connection is then counted.
 */
const LOOKED_UP_MS = 1000;

/** Waits until `c` has no open connection or its drain period passed (or the signal aborts). */
export async function drain(engine: Engine, c: AppContainer, opts: DrainOptions): Promise<void> {
  const seconds = opts.seconds(c.service);
  if (seconds <= 0) return;
  const info = await guard(engine, () => engine.docker.getContainer(c.id).inspect()).catch(() => null);
  if (!info?.State?.Running) return;
  const addresses = new Set(
    Object.values(info.NetworkSettings?.Networks ?? {})
      .map((n) => n?.IPAddress)
      .filter((a): a is string => !!a),
  );
  const pid = info.State.Pid;
  const open = async () =>
    ((await opts.proxied(addresses)) ?? 0) + ((pid ? await peerConnections(pid) : null) ?? 0);
  const t0 = Date.now();
  const end = t0 + seconds * 1000;
  const floor = t0 + Math.min(seconds * 1000, LOOKED_UP_MS);
  let last = 0;
  let held = false;
  for (;;) {
    last = await open();
    if (last === 0 && Date.now() >= floor) {
      if (held)
        opts.log(`${c.service}: ${c.name} drained (its connections ended after ${secondsSince(t0)} s)`);
      return;
    }
    if (last > 0 && !held)
      opts.log(
        `${c.service}: ${c.name} has ${last} open connection${last === 1 ? '' : 's'}: draining (at most ${seconds} s)`,
      );
    held ||= last > 0;
    if (Date.now() >= end || opts.signal?.aborted) break;
    await pause(Math.min(opts.pollMs ?? 250, end - Date.now()), opts.signal);
  }
  if (last === 0) return;
  opts.log(
    `${c.service}: ${c.name} still had ${last} open connection${last === 1 ? '' : 's'} after ${secondsSince(t0)} s ${opts.signal?.aborted ? '(shutting down)' : `(drain_s ${seconds})`}: closing them`,
  );
}

const secondsSince = (t0: number) => ((Date.now() - t0) / 1000).toFixed(1);

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Established connections accepted on the container's listening ports from peers other than the
 * host and the container itself; null when its network namespace's table cannot be read.
 */
export async function peerConnections(pid: number): Promise<number | null> {
  const tables = await Promise.all(
    ['tcp', 'tcp6'].map((t) => readFile(`/proc/${pid}/net/${t}`, 'utf8').catch(() => null)),
  );
  if (tables.every((t) => t === null)) return null;
  const rows = tables.flatMap((t) => (t ? parseTcpTable(t) : []));
  const listening = new Set(rows.filter((r) => r.state === LISTEN).map((r) => r.localPort));
  const host = hostAddresses();
  return rows.filter(
    (r) =>
      r.state === ESTABLISHED &&
      listening.has(r.localPort) &&
      !host.has(r.remote) &&
      !r.remote.startsWith('127.') &&
      r.remote !== '::1',
  ).length;
}

const ESTABLISHED = 0x01;
const LISTEN = 0x0a;

interface TcpRow {
  localPort: number;
  remote: string;
  state: number;
}

/** /proc/net/tcp or tcp6: local port, remote address and state of each socket. */
export function parseTcpTable(text: string): TcpRow[] {
  const out: TcpRow[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const [, local, remote, st] = f as [string, string, string, string];
    const lp = local.split(':')[1];
    const [rip] = remote.split(':');
    if (!lp || !rip) continue;
    out.push({ localPort: parseInt(lp, 16), remote: hexAddress(rip), state: parseInt(st, 16) });
  }
  return out;
}

/** The kernel writes each 32-bit word of an address in host (little-endian) byte order. */
function hexAddress(hex: string): string {
  const bytes: number[] = [];
  for (let w = 0; w < hex.length; w += 8)
    for (let b = 6; b >= 0; b -= 2) bytes.push(parseInt(hex.slice(w + b, w + b + 2), 16));
  if (bytes.length === 4) return bytes.join('.');
  const mapped = bytes.slice(0, 10).every((x) => x === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (mapped) return bytes.slice(12).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return canonical(groups.join(':'));
}

/** One spelling per address (IPv6 compressed as URLs write it), so that the two sources compare. */
function canonical(address: string): string {
  if (!address.includes(':')) return address;
  try {
    return new URL(`http://[${address.split('%')[0]}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

function hostAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) out.add(canonical(a.address));
  return out;
}
