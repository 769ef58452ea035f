// Connections from a network the engine manages are app containers (or the engine's own
// bridges): the specification's plain-HTTP fallback listens on every address, so without this
// any container reaches the API through its network's gateway. The subnets are learned from the
// engine at boot and kept current from its network events; the control plane's own network
// (svc-control, which no app joins) is left out, because when the control plane runs in a
// container the operator's published-port connections arrive from that network's gateway.
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { request, type IncomingMessage } from 'node:http';
import type { Engine } from '../docker/engine.js';
import { CONTROL_NETWORK, LABEL_ROLE } from '../docker/names.js';
import { clientAddress } from '../http/client-address.js';

export interface NetworkInfo {
  Name?: string;
  Labels?: Record<string, string> | null;
  IPAM?: { Config?: Array<{ Subnet?: string }> | null } | null;
}

export interface SubnetGuard {
  /** True when a connection from this address must be closed unread. */
  refuses(address: string | undefined): boolean;
  /** Reads the engine's networks again; keeps the previous list when the engine does not answer. */
  refresh(): Promise<void>;
  /** The subnets currently refused (CIDR strings), for logs and tests. */
  subnets(): string[];
  /** Connections closed so far. */
  refused(): number;
  /** Counts one closed connection. */
  count(): void;
}

/** Excludes the control plane's own network (see the header comment). */
export function appSubnets(networks: NetworkInfo[]): string[] {
  const out = new Set<string>();
  for (const n of networks) {
    if (n.Name === CONTROL_NETWORK || n.Labels?.[LABEL_ROLE] === 'control') continue;
    for (const c of n.IPAM?.Config ?? []) if (c.Subnet) out.add(c.Subnet);
  }
  return [...out];
}

function blockList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [addr, bits] = cidr.split('/');
    const prefix = Number(bits);
    if (!addr || !Number.isInteger(prefix)) continue;
    if (isIPv4(addr)) list.addSubnet(addr, prefix, 'ipv4');
    else if (isIPv6(addr)) list.addSubnet(addr, prefix, 'ipv6');
  }
  return list;
}

/** A socket on a dual-stack listener reports IPv4 peers as `::ffff:a.b.c.d`. */
function plain(address: string): { addr: string; type: 'ipv4' | 'ipv6' } | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { addr: mapped[1]!, type: 'ipv4' };
  if (isIPv4(address)) return { addr: address, type: 'ipv4' };
  const bare = address.split('%')[0]!;
  if (isIPv6(bare)) return { addr: bare, type: 'ipv6' };
  return null;
}

export function createSubnetGuard(list: () => Promise<NetworkInfo[]>, initial: string[] = []): SubnetGuard {
  let cidrs = initial;
  let blocks = blockList(cidrs);
  let refusedCount = 0;
  return {
    refuses(address) {
      if (!address || cidrs.length === 0) return false;
      const p = plain(address);
      return p !== null && blocks.check(p.addr, p.type);
    },
    async refresh() {
      const next = appSubnets(await list());
      cidrs = next;
      blocks = blockList(next);
    },
    subnets: () => [...cidrs],
    refused: () => refusedCount,
    count() {
      refusedCount++;
    },
  };
}

/**
 * A request that a trusted proxy forwarded for a client on an app network: Caddy's control route
 * sets X-Forwarded-For to its connection's peer, so a container asking the host's proxy port for
 * the control domain is refused here as its direct connection would be. The check reads the live
 * list, so Caddy's config never holds the subnets (each change would load a config).
 */
export function refusesForwarded(
  guard: Pick<SubnetGuard, 'refuses'>,
  trusted: BlockList,
  peer: string | undefined,
  xff: string | string[] | undefined,
): boolean {
  if (xff === undefined) return false;
  return guard.refuses(clientAddress(peer, Array.isArray(xff) ? xff.join(',') : xff, trusted));
}

/**
 * GET /networks straight over the socket: boot waits for it, and the full client library
 * (dockerode, loaded on first use) would cost a start seconds for this one call.
 */
export function listEngineNetworks(socketPath: string, timeoutMs = 5_000): Promise<NetworkInfo[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/networks', method: 'GET', timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200)
          return reject(new Error(`engine answered ${res.statusCode} to GET /networks`));
        try {
          const list = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
          if (!Array.isArray(list))
            return reject(new Error('engine answered GET /networks with something other than a list'));
          resolve(list as NetworkInfo[]);
        } catch (e) {
          reject(e);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('engine did not answer GET /networks in time')));
    req.on('error', reject);
    req.end();
  });
}

export function engineSubnetGuard(engine: Engine): SubnetGuard {
  return createSubnetGuard(() => listEngineNetworks(engine.socketPath));
}

function networkEvents(socketPath: string, signal: AbortSignal): Promise<IncomingMessage> {
  const filters = JSON.stringify({ type: ['network'], event: ['create', 'destroy'] });
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path: `/events?filters=${encodeURIComponent(filters)}`, method: 'GET', signal },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`engine answered ${res.statusCode} to the network event stream`));
          return;
        }
        resolve(res);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Keeps the guard current: a refresh on every network created or removed, and one each time the
 * stream is (re)established, since networks may have changed while it was down. Returns when
 * the signal aborts; never throws.
 */
export async function followNetworks(
  engine: Engine,
  guard: SubnetGuard,
  signal: AbortSignal,
  onError: (err: unknown) => void,
): Promise<void> {
  let backoff = 250;
  const refresh = () => guard.refresh().catch(onError);
  while (!signal.aborted) {
    try {
      const stream = await networkEvents(engine.socketPath, signal);
      await refresh();
      backoff = 250;
      const onAbort = () => stream.destroy();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        let buf = '';
        for await (const chunk of stream) {
          buf += chunk.toString();
          // One refresh per chunk of events: a burst (a stack's networks) costs one listing.
          if (buf.includes('\n')) {
            buf = buf.slice(buf.lastIndexOf('\n') + 1);
            await refresh();
          }
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    } catch (err) {
      if (signal.aborted) return;
      onError(err);
    }
    if (signal.aborted) return;
    await new Promise<void>((r) => {
      const t = setTimeout(r, backoff);
      signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
    });
    backoff = Math.min(backoff * 2, 10_000);
  }
}
