// A Swarm cluster of real Docker engines on this one machine, for tests of cluster mode.
//
// Each node is a `dockerd` in its own network namespace (joined to the others by a bridge on the
// host), with its own data root, exec root, socket and hostname. `ip netns exec` cannot run
// dockerd (it remounts /sys and hides the cgroup mounts), so the namespace is entered with
// nsenter and the engine gets private UTS and mount namespaces from unshare. The host reaches every
// node at its bridge address (the control plane under test talks to the first node's socket, and to
// the proxy and registry on its address). This kernel has no IPVS: services use DNS round robin.
//
// Everything a cluster makes is named after a per-process id and removed by `close()` (and, as a
// last resort, at process exit). Needs root, iproute2, nsenter/unshare and the host's dockerd
// (its DOCKER-USER chain lets bridge traffic through).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';
import type Docker from 'dockerode';
import { missing } from './ci.js';
import { BASE_IMAGE, ensureBaseImage, needDocker } from './docker.js';
import { bounded } from './wait.js';

const run = promisify(execFile);
const requireCjs = createRequire(import.meta.url);

export interface ClusterNode {
  /** Hostname inside the cluster: node1, node2, ... */
  name: string;
  netns: string;
  /** The node's address on the bridge (reachable from the host). */
  addr: string;
  socketPath: string;
  docker: Docker;
  /** Swarm node id, once joined. */
  id: string;
  role: 'manager' | 'worker';
  /** The cgroup parent of the node's containers (they are killed with the node). */
  cgroup: string;
}

export interface TestCluster {
  nodes: ClusterNode[];
  manager: ClusterNode;
  /** The host's own address on the cluster's bridge. */
  hostAddr: string;
  /** Copies images from the host's engine into every node's (or the listed ones). */
  loadImages(refs: string[], nodes?: ClusterNode[]): Promise<void>;
  /** A node lost: its engine, containerd and every container process are killed at once. */
  killNode(node: ClusterNode): Promise<void>;
  close(): Promise<void>;
}

const clusters = new Set<{ close(): Promise<void>; closeSync(): void }>();
process.once('exit', () => {
  for (const c of clusters) c.closeSync();
});

let seq = 0;

/** Every teardown command is bounded (close() runs them synchronously, also at process exit). */
const SYNC = { timeout: 10_000, killSignal: 'SIGKILL' } as const;

/** Gate: skips (loudly) without root, the tools or an engine; fails under CI. */
export async function needCluster(t: TestContext): Promise<boolean> {
  if (!(await needDocker(t))) return false;
  if (process.getuid?.() !== 0) return missing(t, 'a test cluster needs root (network namespaces)');
  for (const tool of ['ip', 'nsenter', 'unshare', 'dockerd', 'iptables']) {
    const found = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool]).status === 0;
    if (!found) return missing(t, `a test cluster needs ${tool}`);
  }
  await ensureBaseImage();
  return true;
}

function subnetFree(octet: number): boolean {
  const r = spawnSync('ip', ['-o', 'addr']);
  return !r.stdout.toString().includes(` 10.${octet}.`);
}

/**
 * Starts `size` engines (node1 is the manager; `managers` of them are managers) and forms a swarm
 * with `--default-addr-pool` away from the bridge's subnet. Images in `images` are loaded on every
 * node (the base busybox image always is).
 */
export async function startTestCluster(
  opts: {
    size?: number;
    managers?: number;
    images?: string[];
    /** `host:port` of plain-HTTP registries the engines may pull from (daemon.json). */
    insecureRegistries?: string[];
  } = {},
): Promise<TestCluster> {
  const size = opts.size ?? 3;
  const id = `${(process.pid % 46656).toString(36)}${(seq++).toString(36)}`;
  let octet = 20 + ((process.pid * 7 + seq * 13) % 100);
  for (let i = 0; i < 100 && !subnetFree(octet); i++) octet = 20 + ((octet - 20 + 1) % 100);
  const poolOctet = octet + 128;
  const bridge = `svcb${id}`;
  const root = `/tmp/svc-cluster-${id}`;
  const hostAddr = `10.${octet}.0.1`;
  const children: ChildProcess[] = [];
  const nodes: ClusterNode[] = [];
  const netnses: string[] = [];
  let closed = false;

  const ip = (args: string[]) => run('ip', args, { timeout: 10_000 });
  const forwardRule = ['DOCKER-USER', '-i', bridge, '-o', bridge, '-j', 'ACCEPT'];

  const closeSync = () => {
    if (closed) return;
    closed = true;
    clusters.delete(handle);
    for (const ns of netnses) killNetnsSync(ns);
    for (const n of nodes) killCgroupSync(n.cgroup);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    spawnSync('iptables', ['-D', ...forwardRule], SYNC);
    spawnSync('ip', ['link', 'del', bridge], SYNC);
    for (const ns of netnses) spawnSync('ip', ['netns', 'del', ns], SYNC);
    try {
      rmSync(root, { recursive: true, force: true });
    } catch {
      /* a mount of a killed engine may linger a moment; /tmp is cleaned anyway */
    }
  };
  const handle = {
    close: async () => closeSync(),
    closeSync,
  };
  clusters.add(handle);

  try {
    mkdirSync(root, { recursive: true });
    await ip(['link', 'add', bridge, 'type', 'bridge']);
    await ip(['addr', 'add', `${hostAddr}/24`, 'dev', bridge]);
    await ip(['link', 'set', bridge, 'up']);
    // The host's engine sets FORWARD to drop, and bridged frames pass through it here.
    await run('iptables', ['-I', ...forwardRule], { timeout: 10_000 });
    for (let i = 1; i <= size; i++) {
      const name = `node${i}`;
      const netns = `svcn${id}${i}`;
      const addr = `10.${octet}.0.${10 + i}`;
      const veth = `svcv${id}${i}`;
      await ip(['netns', 'add', netns]);
      netnses.push(netns);
      await ip(['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
      await ip(['link', 'set', veth, 'master', bridge, 'up']);
      await ip(['-n', netns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0']);
      await ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
      await ip(['-n', netns, 'link', 'set', 'lo', 'up']);
      await ip(['-n', netns, 'route', 'add', 'default', 'via', hostAddr]);
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'daemon.json'),
        JSON.stringify(
          opts.insecureRegistries?.length ? { 'insecure-registries': opts.insecureRegistries } : {},
        ),
      );
      const socketPath = join(dir, 'docker.sock');
      const cgroup = `svc-${id}-${name}`;
      const child = spawn(
        'nsenter',
        [
          `--net=/run/netns/${netns}`,
          'unshare',
          '--uts',
          '--mount',
          '--propagation',
          'slave',
          'sh',
          '-c',
          'hostname "$1"; shift; exec "$@"',
          'sh',
          name,
          'dockerd',
          '--data-root',
          join(dir, 'data'),
          '--exec-root',
          join(dir, 'exec'),
          '--pidfile',
          join(dir, 'docker.pid'),
          '-H',
          `unix://${socketPath}`,
          '--config-file',
          join(dir, 'daemon.json'),
          '--cgroup-parent',
          cgroup,
        ],
        { stdio: ['ignore', 'ignore', 'ignore'], detached: false },
      );
      children.push(child);
      const DockerClass = requireCjs('dockerode') as typeof Docker;
      nodes.push({
        name,
        netns,
        addr,
        socketPath,
        docker: new DockerClass({ socketPath }),
        cgroup,
        id: '',
        role: i <= (opts.managers ?? 1) ? 'manager' : 'worker',
      });
    }
    for (const n of nodes) await waitForEngine(n);
    const manager = nodes[0]!;
    await bounded(
      'swarm init',
      manager.docker.swarmInit({
        ListenAddr: `${manager.addr}:2377`,
        AdvertiseAddr: manager.addr,
        DefaultAddrPool: [`10.${poolOctet}.0.0/16`],
        SubnetSize: 24,
      }),
      120_000,
    );
    const swarm = (await manager.docker.swarmInspect()) as {
      JoinTokens: { Worker: string; Manager: string };
    };
    manager.id = (await manager.docker.info()).Swarm.NodeID;
    for (const n of nodes.slice(1)) {
      await bounded(
        `${n.name} joining the swarm`,
        n.docker.swarmJoin({
          ListenAddr: `${n.addr}:2377`,
          AdvertiseAddr: n.addr,
          RemoteAddrs: [`${manager.addr}:2377`],
          JoinToken: n.role === 'manager' ? swarm.JoinTokens.Manager : swarm.JoinTokens.Worker,
        }),
        120_000,
      );
      n.id = (await n.docker.info()).Swarm.NodeID;
    }
    const cluster: TestCluster = {
      nodes,
      manager,
      hostAddr,
      loadImages: (refs, on = nodes) => loadImages(refs, on),
      killNode: async (node) => {
        // The engine and its shims, then the containers (their own namespaces, the node's cgroup),
        // then the wire: nothing of the node answers any more.
        killNetnsSync(node.netns);
        killCgroupSync(node.cgroup);
        await ip(['-n', node.netns, 'link', 'set', 'eth0', 'down']).catch(() => undefined);
      },
      close: handle.close,
    };
    await cluster.loadImages([BASE_IMAGE, ...(opts.images ?? [])]);
    await waitForReady(manager, nodes.length);
    return cluster;
  } catch (e) {
    closeSync();
    throw e;
  }
}

async function waitForEngine(n: ClusterNode): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    if (existsSync(n.socketPath)) {
      try {
        await bounded('a ping', n.docker.ping(), 10_000);
        return;
      } catch {
        /* starting */
      }
    }
    if (Date.now() > until) throw new Error(`the engine of ${n.name} did not start within 60 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function waitForReady(manager: ClusterNode, count: number): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    const list = (await bounded('listing the nodes', manager.docker.listNodes(), 30_000)) as Array<{
      Status?: { State?: string };
    }>;
    if (list.filter((n) => n.Status?.State === 'ready').length >= count) return;
    if (Date.now() > until) throw new Error(`the swarm did not reach ${count} ready nodes within 60 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The name under which a loaded image runs as a Swarm service without a registry. A node's agent
 * tries to pull a service's image before it falls back to its local copy; for a name on a registry
 * that cannot be reached that takes half a minute, for one on a closed loopback port no time.
 */
export function unpullable(ref: string): string {
  return `127.0.0.1:1/${ref}`;
}

/** `docker save` on the host piped into each node's `docker load` (no registry), and tagged unpullable. */
async function loadImages(refs: string[], nodes: ClusterNode[]): Promise<void> {
  for (const n of nodes) {
    const script = 'docker save "$@" | docker -H "unix://$SOCK" load -q >/dev/null';
    await runGroup('sh', ['-c', script, 'sh', ...refs], { ...process.env, SOCK: n.socketPath }, 300_000);
    for (const ref of refs) {
      const [repo, tag] = splitRef(unpullable(ref));
      await n.docker.getImage(ref).tag({ repo, tag });
    }
  }
}

/**
 * A command in a process group of its own, killed whole (the pipeline's docker clients too) when it
 * runs past `timeoutMs`: a timeout that killed only the shell would leave the pipe open, and the
 * wait for its end would never return.
 */
function runGroup(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-2000)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone already */
      }
      reject(new Error(`${cmd} ${args.slice(0, 2).join(' ')} ran past ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${cmd} exited with ${code}: ${stderr.trim()}`));
    });
  });
}

function splitRef(ref: string): [string, string] {
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
}

/** Every process in the namespace (the engine, containerd, shims and containers) gets SIGKILL. */
function killNetnsSync(netns: string): void {
  const r = spawnSync('ip', ['netns', 'pids', netns], SYNC);
  const pids = r.stdout
    .toString()
    .split('\n')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 1);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
}

/** Every process under the cgroup parent (cgroup v1 or v2), then the empty groups themselves. */
function killCgroupSync(parent: string): void {
  const roots = existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? ['/sys/fs/cgroup']
    : [
        '/sys/fs/cgroup/pids',
        '/sys/fs/cgroup/memory',
        '/sys/fs/cgroup/cpu,cpuacct',
        '/sys/fs/cgroup/devices',
      ];
  for (const base of roots) {
    const dir = join(base, parent);
    if (!existsSync(dir)) continue;
    const r = spawnSync(
      'sh',
      ['-c', 'cat "$1"/cgroup.procs "$1"/*/cgroup.procs 2>/dev/null', 'sh', dir],
      SYNC,
    );
    for (const pid of r.stdout.toString().split('\n').map(Number)) {
      if (!Number.isInteger(pid) || pid <= 1) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
  }
}
