// npm run bench:edge-reload  [-- --reloads 200 --hosts 30 --clients 4]
//
// Does a Caddy config reload fail a visitor's connection? Deployments no longer load configs (the
// routes look their containers up, lib/proxy/config.ts), but a new or removed host, certificate or
// route still does, and each load restarts Caddy's servers and TLS app. Real components: Caddy
// (its own process, admin API only) and Pebble issuing a certificate for each of `--hosts` names.
// Two plain HTTP servers on loopback are the upstreams; each load switches between them, which
// makes every load a real one (a fixed upstream, as the control route has: what changes in a
// real load is another route or certificate, which costs the same restart).
// `--clients` loops each open a new TLS connection per request (round robin over the hosts)
// while the config is reloaded `--reloads` times. Run twice in the same process, on the same
// certificates:
// - baseline: one ACME policy for every host, as Caddy's own automatic HTTPS builds it;
// - ours: the config the control plane loads (`buildCaddyConfig`).
// Prints requests, failed TLS handshakes and connection resets of each. A failed handshake is
// a visitor's error page (no client retries it); a reset before any answer is retried by clients
// and disappears with `net.ipv4.tcp_migrate_req=1` (printed).
import { createServer, type Server } from 'node:http';
import { readFile } from 'node:fs/promises';
import { startEdgeLab, type EdgeLab } from '../tests/_support/edge.js';
import {
  buildCaddyConfig,
  withOwned,
  type EdgeSettings,
  type OwnedConfig,
  type PlannedRoute,
} from '#lib/proxy/config.js';
import { createCaddyClient } from '#lib/proxy/caddy.js';
import { arg } from './_args.js';

interface Tally {
  ok: number;
  handshake: number;
  reset: number;
  other: Map<string, number>;
}

function listen(body: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((_req, res) => res.end(body));
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as { port: number }).port }),
    );
  });
}

/** The same hosts and certificates with one plain policy: certificates load only when the TLS app starts. */
function baseline(owned: OwnedConfig): OwnedConfig {
  const tls = structuredClone(owned.tls) as { automation: { policies: Array<Record<string, unknown>> } };
  tls.automation.policies = tls.automation.policies.filter((p) => !p.on_demand);
  return { ...owned, tls };
}

async function main(): Promise<void> {
  const reloads = arg('--reloads', 200);
  const hostCount = arg('--hosts', 30);
  const clients = arg('--clients', 4);
  let lab: EdgeLab | null = null;
  const upstreams = await Promise.all([listen('old\n'), listen('new\n')]);
  try {
    lab = await startEdgeLab();
    const settings: EdgeSettings = {
      httpPort: lab.httpPort,
      httpsPort: lab.httpsPort,
      accessLog: lab.accessLog,
      acme: { ca: lab.vars.SVC_ACME_CA!, caRoot: lab.vars.SVC_ACME_CA_ROOT!, email: null },
      controlUpstream: '127.0.0.1:9',
    };
    const hosts = Array.from({ length: hostCount }, (_, i) => `h${i}.reload.test`);
    const client = createCaddyClient(lab.adminUrl);
    const owned = (side: number, ready: boolean): OwnedConfig => {
      const port = upstreams[side]!.port;
      const routes: PlannedRoute[] = hosts.map((hostname, i) => ({
        id: `svc-route-r${i}`,
        hostname,
        source: 'domain',
        domainId: `r${i}`,
        target: { kind: 'control', dial: [`127.0.0.1:${port}`], refuse: [] },
        tls: 'acme',
        certReady: ready,
      }));
      return buildCaddyConfig(routes, settings, []);
    };
    const load = async (cfg: OwnedConfig) =>
      client.load(withOwned(await client.getConfig(), cfg, client.listen));

    await load(owned(0, false));
    const t0 = performance.now();
    for (const h of hosts) {
      for (let tries = 0; ; tries++) {
        const ok = await lab.https(h).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        if (tries > 300) throw new Error(`no certificate for ${h}: ${lab.caddyOutput().slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const migrate = await readFile('/proc/sys/net/ipv4/tcp_migrate_req', 'utf8').then(
      (s) => s.trim(),
      () => 'unavailable',
    );
    console.log(
      `${hostCount} hosts with Pebble certificates in ${((performance.now() - t0) / 1000).toFixed(1)} s; net.ipv4.tcp_migrate_req=${migrate}`,
    );

    const storm = async (name: string, variant: (c: OwnedConfig) => OwnedConfig): Promise<Tally> => {
      await load(variant(owned(0, true)));
      const tally: Tally = { ok: 0, handshake: 0, reset: 0, other: new Map() };
      let stop = false;
      const loop = async (start: number) => {
        for (let i = start; !stop; i++) {
          try {
            const r = await lab!.https(hosts[i % hosts.length]!);
            if (r.status === 200) tally.ok++;
            else tally.other.set(`HTTP ${r.status}`, (tally.other.get(`HTTP ${r.status}`) ?? 0) + 1);
          } catch (e) {
            const err = e as NodeJS.ErrnoException;
            if (err.code === 'EPROTO' || /alert/.test(err.message)) tally.handshake++;
            else if (err.code === 'ECONNRESET') tally.reset++;
            else tally.other.set(err.message, (tally.other.get(err.message) ?? 0) + 1);
          }
        }
      };
      const loops = Array.from({ length: clients }, (_, i) => loop(i * 7));
      const s = performance.now();
      try {
        for (let i = 0; i < reloads; i++) {
          await load(variant(owned((i + 1) % 2, true)));
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        stop = true;
        await Promise.all(loops);
      }
      const other = [...tally.other].map(([k, v]) => `${k} x${v}`).join('; ');
      console.log(
        `${name.padEnd(9)}: ${reloads} reloads in ${((performance.now() - s) / 1000).toFixed(1)} s, ${tally.ok} requests answered, failed TLS handshakes ${tally.handshake}, resets before any answer ${tally.reset}${other ? `, other: ${other}` : ''}`,
      );
      return tally;
    };
    const base = await storm('baseline', baseline);
    const ours = await storm('ours', (c) => c);
    const rate = (t: Tally) => (t.handshake / reloads) * 100;
    console.log(
      `failed handshakes per 100 reloads: baseline ${rate(base).toFixed(1)}, ours ${rate(ours).toFixed(1)} (goal 0)`,
    );
  } catch (e) {
    console.error(`Caddy's output, last lines:\n${lab?.caddyOutput().slice(-4000) ?? ''}`);
    throw e;
  } finally {
    for (const u of upstreams) u.server.close();
    await lab?.stop();
  }
}

await main();
