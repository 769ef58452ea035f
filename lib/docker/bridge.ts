// The host side of a bridge network: its interface name and the host's address on it. An engine
// may report a bridge's IPAM config with a subnet and no gateway (a freshly started engine's default
// bridge does, on some hosts), so the gateway field is the last thing trusted: the address the
// host's interface actually holds first, then that field, then the subnet's first host (what the
// engine gives the bridge when nothing says otherwise).
import { networkInterfaces } from 'node:os';
import { BlockList, isIPv4 } from 'node:net';

export interface BridgeInfo {
  Id?: string;
  Name?: string;
  Driver?: string;
  Options?: Record<string, string> | null;
  IPAM?: { Config?: Array<{ Subnet?: string; Gateway?: string }> | null } | null;
}

/** The host interface of a bridge network: its configured name, else `br-<first 12 of the id>`. */
export function bridgeInterface(net: BridgeInfo): string | null {
  if (net.Driver && net.Driver !== 'bridge') return null;
  const named = net.Options?.['com.docker.network.bridge.name'];
  if (named) return named;
  return net.Id ? `br-${net.Id.slice(0, 12)}` : null;
}

/** The first usable address of an IPv4 subnet (`172.17.0.0/16` -> `172.17.0.1`). */
export function firstHost(cidr: string): string | null {
  const [addr, bits] = cidr.split('/');
  if (!addr || !isIPv4(addr) || !/^\d+$/.test(bits ?? '')) return null;
  const prefix = Number(bits);
  if (prefix > 30) return null;
  const n = addr.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const host = ((n & mask) >>> 0) + 1;
  return [24, 16, 8, 0].map((s) => (host >>> s) & 255).join('.');
}

type Interfaces = ReturnType<typeof networkInterfaces>;

/**
 * The host's IPv4 address on a bridge network: the bridge interface's own address inside the
 * subnet (when this process shares the engine's network namespace), else the reported gateway,
 * else the subnet's first host. Null when the network has no IPv4 subnet.
 */
export function bridgeHostAddress(
  net: BridgeInfo,
  interfaces: Interfaces = networkInterfaces(),
): string | null {
  const config = (net.IPAM?.Config ?? []).find((c) => c.Subnet && isIPv4(c.Subnet.split('/')[0]!));
  if (!config?.Subnet) return null;
  const [base, bits] = config.Subnet.split('/');
  const within = new BlockList();
  within.addSubnet(base!, Number(bits), 'ipv4');
  const iface = bridgeInterface(net);
  const own = (iface ? interfaces[iface] : undefined)?.find(
    (a) => a.family === 'IPv4' && within.check(a.address, 'ipv4'),
  );
  if (own) return own.address;
  if (config.Gateway && isIPv4(config.Gateway)) return config.Gateway;
  return firstHost(config.Subnet);
}
