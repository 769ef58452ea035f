// Keeps Caddy's running config equal to the one computed from rows: on start, on every change,
// and on a timer that notices Caddy restarted (empty, or with an old autosave) or was edited by
// hand. Each run reads Caddy's config and loads ours only when they differ, so the check is a
// read, and a heal is one load. Runs never overlap; calls made while one runs share the next.
import type { Logger } from '../log.js';
import { CaddyError, type CaddyClient } from './caddy.js';
import {
  buildCaddyConfig,
  canonicalJson,
  planRoutes,
  withOwned,
  type EdgeRows,
  type PlannedRoute,
} from './config.js';

export interface ProxyState {
  /** Caddy runs the config computed from the rows as they were at the last run. */
  synced: boolean;
  error?: string;
  /** Caddy's admin API answered at the last run. */
  reachable: boolean;
  /** The last run that left Caddy in sync. */
  last_sync_at: string | null;
  /** The last time a config was loaded (a change, or a heal). */
  last_load_at: string | null;
  /** Why: the reason the sync that loaded it was asked with (`domain change`, `host state`, `check`, ...). */
  last_load_reason: string | null;
  /** Loads since start (a run that finds Caddy in sync does not load). */
  loads: number;
  routes: number;
}

export interface ProxySyncOptions {
  client: CaddyClient;
  rows: () => Promise<EdgeRows>;
  log: Logger;
  now?: () => number;
  /** How often Caddy's config is compared with ours (at most 30 s by contract). */
  checkIntervalMs?: number;
  /** Every plan computed, for whoever needs the same view (request attribution, the checker). */
  onPlan?: (routes: PlannedRoute[], rows: EdgeRows) => void;
  /**
   * Run before Caddy is read, with the rows of the run: in cluster mode, makes sure Caddy's
   * container runs and sits on the apps' networks (lib/proxy/cluster.ts). A CaddyError from it
   * fails the run like an unreachable Caddy.
   */
  prepare?: (rows: EdgeRows) => Promise<void>;
  /** false: SVC_PROXY=off; every run answers not synced and Caddy is never contacted. */
  enabled?: boolean;
}

export const DEFAULT_CHECK_INTERVAL_MS = 15_000;

export class ProxySync {
  private readonly opts: ProxySyncOptions;
  private readonly now: () => number;
  private st: ProxyState;
  private running: Promise<ProxyState> | null = null;
  private queued: Promise<ProxyState> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private planListeners = new Set<(routes: PlannedRoute[]) => void>();
  /** Whether this Caddy takes the on-demand policy; false once it refused one. */
  private onDemand = true;

  constructor(opts: ProxySyncOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.st = {
      synced: false,
      reachable: false,
      last_sync_at: null,
      last_load_at: null,
      last_load_reason: null,
      loads: 0,
      routes: 0,
    };
    if (opts.enabled === false) this.st.error = 'the proxy is turned off (SVC_PROXY=off)';
  }

  get enabled(): boolean {
    return this.opts.enabled !== false;
  }

  state(): ProxyState {
    return { ...this.st };
  }

  /** The wire form for answers of domain operations: `{synced, error?}`. */
  summary(): { synced: boolean; error?: string } {
    return this.st.synced ? { synced: true } : { synced: false, error: this.st.error ?? 'not synced yet' };
  }

  /** Called with every plan computed (request attribution follows the routes Caddy serves). */
  onPlan(fn: (routes: PlannedRoute[]) => void): () => void {
    this.planListeners.add(fn);
    return () => this.planListeners.delete(fn);
  }

  /** Brings Caddy in line with the rows now; resolves with the state after a run that began after this call. */
  sync(reason = 'change'): Promise<ProxyState> {
    if (!this.enabled || this.stopped) return Promise.resolve(this.state());
    if (this.queued) return this.queued;
    const after = this.running ?? Promise.resolve(this.st);
    const next: Promise<ProxyState> = after.then(() => {
      this.queued = null;
      this.running = next;
      return this.runOnce(reason).finally(() => {
        if (this.running === next) this.running = null;
      });
    });
    this.queued = next;
    return next;
  }

  /** Initial sync, then the periodic check. */
  start(): void {
    if (!this.enabled || this.timer || this.stopped) return;
    void this.sync('start');
    this.timer = setInterval(
      () => void this.sync('check'),
      this.opts.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await (this.queued ?? this.running)?.catch(() => {});
  }

  private async runOnce(reason: string): Promise<ProxyState> {
    const at = new Date(this.now()).toISOString();
    const { client, log } = this.opts;
    try {
      const rows = await this.opts.rows();
      const routes = planRoutes(rows);
      this.opts.onPlan?.(routes, rows);
      for (const fn of this.planListeners) fn(routes);
      await this.opts.prepare?.(rows);
      const current = await client.getConfig();
      const wantedWith = (onDemand: boolean) =>
        withOwned(
          current,
          buildCaddyConfig(routes, rows.settings, rows.certificates, { onDemand }),
          client.listen,
        );
      const wanted = wantedWith(this.onDemand);
      if (canonicalJson(current) !== canonicalJson(wanted)) {
        try {
          await client.load(wanted);
        } catch (e) {
          // Caddy 2.7.3 and later refuse on-demand TLS without an `ask` endpoint; they also keep
          // certificates across reloads, which is all the on-demand policy is for (config.ts).
          if (!(e instanceof CaddyError) || e.unreachable || !this.onDemand || !/on-demand/i.test(e.message))
            throw e;
          this.onDemand = false;
          log.warn(
            { error: e.message },
            'Caddy refuses on-demand TLS; loading certificates at TLS start instead',
          );
          await client.load(wantedWith(false));
        }
        this.st.loads++;
        this.st.last_load_at = at;
        this.st.last_load_reason = reason;
        // Loads are rare (hosts, certificates, routes) and close every WebSocket through Caddy:
        // each is worth a line. One during a periodic check means Caddy had drifted: it
        // restarted or someone edited it.
        log.info({ reason, routes: routes.length }, 'proxy config loaded into Caddy');
      }
      this.st = {
        ...this.st,
        synced: true,
        error: undefined,
        reachable: true,
        last_sync_at: at,
        routes: routes.length,
      };
    } catch (e) {
      const error = e instanceof CaddyError ? e.message : 'internal error while computing the proxy config';
      if (!(e instanceof CaddyError)) log.error({ err: e }, 'proxy sync failed');
      else if (this.st.synced || this.st.error !== error) log.warn({ error }, 'proxy not in sync');
      this.st = {
        ...this.st,
        synced: false,
        error,
        reachable: e instanceof CaddyError ? !e.unreachable : this.st.reachable,
      };
    }
    return this.state();
  }
}
