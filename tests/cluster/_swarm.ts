// Helpers for the swarm deploy tests: a plain-HTTP registry (Debian's docker-registry) on the
// host's bridge address, a small web image, and probes from a container on an app's overlay.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BASE_IMAGE } from '../_support/docker.js';
import { freePort } from '../_support/net.js';
import type { ClusterNode } from '../_support/cluster.js';

const run = promisify(execFile);

export interface TestRegistry {
  addr: string;
  stop(): Promise<void>;
}

export async function startRegistry(host: string): Promise<TestRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-registry-'));
  const port = await freePort();
  const addr = `${host}:${port}`;
  await writeFile(
    join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: ${addr}`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('docker-registry', ['serve', join(dir, 'config.yml')], {
    stdio: 'ignore',
  });
  const until = Date.now() + 15_000;
  for (;;) {
    const up = await new Promise<boolean>((r) => {
      const c = connect(port, host, () => {
        c.destroy();
        r(true);
      });
      c.once('error', () => r(false));
      c.setTimeout(2000, () => {
        c.destroy();
        r(false);
      });
    });
    if (up) break;
    if (Date.now() > until || child.exitCode !== null)
      throw new Error(`the registry did not listen on ${addr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    addr,
    async stop() {
      child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A busybox web server on 8080 answering `$MSG <hostname>` at /, "ok" at /ok, and with a /data
 * volume the number of times a container started on it at /starts.
 */
export const WEB_CMD =
  'mkdir -p /www; echo "${MSG:-v1} $(hostname)" > /www/index.html; echo ok > /www/ok; ' +
  'if [ -d /data ]; then echo x >> /data/starts; wc -l < /data/starts > /www/starts; fi; ' +
  "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait";

export function webDockerfile(msg = 'v1'): string {
  return `FROM ${BASE_IMAGE}\nENV MSG=${msg}\nEXPOSE 8080\nCMD ["sh", "-c", ${JSON.stringify(WEB_CMD)}]\n`;
}

/** Builds the web image on the host's engine (then loaded into the cluster's nodes). */
export async function buildWebImage(tag: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-web-'));
  try {
    await writeFile(join(dir, 'Dockerfile'), webDockerfile());
    await run('docker', ['build', '-q', '-t', tag, dir], { timeout: 120_000 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Asks every address of `tasks.<service>` on the app's overlay (from a throwaway container on the
 * manager) for `path`; returns the answers (stale addresses just do not answer).
 */
export async function probeTasks(
  manager: ClusterNode,
  network: string,
  service: string,
  path = '/',
): Promise<string[]> {
  const script =
    'for a in $(nslookup "tasks.$1" 127.0.0.11 | sed -n "s/^Address: //p" | grep -v ":53$"); do ' +
    'busybox timeout 3 busybox wget -qO- "http://$a:8080$2"; done; true';
  const out = await run(
    'docker',
    [
      '-H',
      `unix://${manager.socketPath}`,
      'run',
      '--rm',
      '--network',
      network,
      BASE_IMAGE,
      'sh',
      '-c',
      script,
      'sh',
      service,
      path,
    ],
    { timeout: 60_000 },
  ).catch(() => ({ stdout: '' }));
  return out.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}
