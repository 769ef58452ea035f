// The proxy's state in words, for the places an operator looks first (the apps list, an app's
// header, the overview): a deploy can succeed while Caddy is away, and then no URL works.
import type { ProxySync } from './sync.js';

export const PROXY_HEALTH_STATES = ['ok', 'starting', 'off', 'unreachable', 'out_of_sync'] as const;
export type ProxyHealthState = (typeof PROXY_HEALTH_STATES)[number];

export interface ProxyHealth {
  state: ProxyHealthState;
  /** One or two sentences: what is wrong and what to do. */
  detail: string;
}

export function proxyHealth(proxy: Pick<ProxySync, 'enabled' | 'state'>): ProxyHealth {
  if (!proxy.enabled)
    return {
      state: 'off',
      detail: 'The proxy is turned off (SVC_PROXY=off): apps run, but no URL reaches them.',
    };
  const st = proxy.state();
  if (st.synced) return { state: 'ok', detail: 'Caddy serves the current routes.' };
  if (st.error === undefined)
    return { state: 'starting', detail: 'The control plane is bringing Caddy up to date.' };
  if (!st.reachable)
    return {
      state: 'unreachable',
      detail:
        `Caddy's admin API does not answer (${st.error}). Apps deploy and run, but their URLs ` +
        'do not work until Caddy runs: start it (README, "Caddy") or point SVC_CADDY_ADMIN at it.',
    };
  return {
    state: 'out_of_sync',
    detail: `Caddy has not taken the latest routes (${st.error}); the next check retries.`,
  };
}
