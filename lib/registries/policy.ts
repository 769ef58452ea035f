// Which addresses a registry host may resolve to: the self-hosted policy of lib/net (private and
// loopback allowed; link-local, multicast and the like refused), with this control plane's own
// endpoints (its API port, Caddy's admin port) as the ports a host of its own may not name.
import type { Config } from '../config.js';
import { checkSelfHosted, type SelfHostedPolicy } from '../net/self-hosted.js';
import type { ResolvedAddress } from '../net/outbound.js';
import { ruleFor } from './hosts/index.js';

export function registryPolicy(config: Pick<Config, 'port' | 'proxy'>): SelfHostedPolicy {
  const ports = [config.port];
  const admin = config.proxy.adminUrl;
  if (/^https?:\/\//.test(admin)) {
    const u = new URL(admin);
    ports.push(Number(u.port || (u.protocol === 'https:' ? 443 : 80)));
  }
  return { controlPorts: ports };
}

/** `host[:port]` -> name and port (443 when the host names none, as the engine's first try). */
export function hostPort(host: string): { name: string; port: number } {
  const m = /^(.*?)(?::(\d{1,5}))?$/.exec(host)!;
  return { name: m[1]!, port: m[2] ? Number(m[2]) : 443 };
}

/** Resolves the host a registry is reached at once and applies the policy; throws OutboundRefused. */
export async function checkRegistryHost(host: string, policy: SelfHostedPolicy): Promise<ResolvedAddress> {
  const { name, port } = hostPort(ruleFor(host).apiHost(host));
  return checkSelfHosted(name, port, policy);
}
