// A real private container registry for tests: Debian's `docker-registry` (the distribution
// registry) on a free loopback port, with htpasswd (bcrypt, made by `htpasswd -B` of
// apache2-utils) authentication. The engine treats 127.0.0.0/8 registries as insecure, so it speaks
// plain HTTP to it and sends basic credentials without TLS. One registry per test file, shared by
// its tests; `stop()` ends the process and removes its storage and every local tag `push` made.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitListening } from './net.js';
import { DOCKER_SOCKET } from './docker.js';
import { missing } from './ci.js';
import type { TestContext } from 'node:test';

const run = promisify(execFile);

export interface TestRegistry {
  /** `127.0.0.1:<port>`, as image references and stored credentials name it. */
  host: string;
  username: string;
  password: string;
  /** Tags `localRef` as `<host>/<path>`, pushes it with the credentials; answers its manifest digest. */
  push(localRef: string, path: string): Promise<string>;
  /** Makes `to` name what `from` names in the registry (a CI moving a tag); answers the digest. */
  copy(from: string, to: string): Promise<string>;
  /** Removes a reference from the engine (a tag, or the last name of an image). */
  forget(ref: string): Promise<void>;
  /** The registry's own log so far (to prove what it was, and was not, sent). */
  log(): string;
  stop(): Promise<void>;
}

const docker = (args: string[], input?: string) =>
  new Promise<string>((resolve, reject) => {
    const p = spawn('docker', ['-H', `unix://${DOCKER_SOCKET}`, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b));
    p.stderr.on('data', (b: Buffer) => (err += b));
    p.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`docker ${args[0]}: ${err.trim()}`)),
    );
    p.stdin.end(input ?? '');
  });

/** Call first: skips (loudly) without docker-registry and htpasswd (apache2-utils), or fails under CI. */
export async function needRegistry(t: Pick<TestContext, 'name' | 'skip'>): Promise<boolean> {
  for (const bin of ['docker-registry', 'htpasswd']) {
    const found = await run('sh', ['-c', 'command -v "$1"', 'sh', bin]).then(
      () => true,
      () => false,
    );
    if (!found) return missing(t, `${bin} is not installed (Debian: docker-registry, apache2-utils)`);
  }
  return true;
}

/** Starts the registry; `username`/`password` are the only credentials it accepts. */
export async function startRegistry(
  opts: { username?: string; password?: string } = {},
): Promise<TestRegistry> {
  const username = opts.username ?? 'ci';
  const password = opts.password ?? `pw-${Math.random().toString(36).slice(2)}-Secret`;
  const dir = await mkdtemp(join(tmpdir(), 'svc-registry-'));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const { stdout: hash } = await run('htpasswd', ['-Bbn', username, password]);
  await writeFile(join(dir, 'htpasswd'), hash);
  await writeFile(
    join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: info',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${host}`,
      `  secret: ${Math.random().toString(36).slice(2)}`,
      'auth:',
      '  htpasswd:',
      '    realm: svc-test',
      `    path: ${join(dir, 'htpasswd')}`,
      '',
    ].join('\n'),
  );
  let output = '';
  const proc: ChildProcess = spawn('docker-registry', ['serve', join(dir, 'config.yml')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (b: Buffer) => (output += b));
  proc.stderr!.on('data', (b: Buffer) => (output += b));
  await waitListening(port);
  const pushed = new Set<string>();
  // URL-safe base64 with its padding: the engine's decoder refuses the unpadded form.
  const auth = Buffer.from(JSON.stringify({ username, password, serveraddress: host }))
    .toString('base64')
    .replace(/\+/g, '-')
    .replace(/\//g, '_');
  const registry: TestRegistry = {
    host,
    username,
    password,
    async push(localRef, path) {
      const ref = `${host}/${path}`;
      await docker(['tag', localRef, ref]);
      pushed.add(ref);
      // The engine's API directly: the CLI would need a `docker login` that writes a config file.
      const out = await enginePush(ref, auth);
      const digest = /"Digest":"(sha256:[0-9a-f]{64})"/.exec(out)?.[1];
      if (!digest) throw new Error(`push of ${ref} reported no digest: ${out.slice(-400)}`);
      return digest;
    },
    async copy(from, to) {
      const src = `${host}/${from}`;
      const dst = `${host}/${to}`;
      // What the engine's own tag names stays as it was: the copy happens "elsewhere", as a CI's.
      const before = (await docker(['image', 'inspect', '-f', '{{.Id}}', dst]).catch(() => '')).trim();
      await engineCall('POST', `/images/create?fromImage=${encodeURIComponent(src)}`, auth);
      const digest = await registry.push(src, to);
      if (before) await docker(['tag', before, dst]);
      else await docker(['image', 'rm', dst]).catch(() => {});
      await docker(['image', 'rm', src]).catch(() => {});
      return digest;
    },
    async forget(ref) {
      await docker(['image', 'rm', ref]).catch(() => {});
    },
    log: () => output,
    async stop() {
      proc.kill('SIGTERM');
      for (const ref of pushed) await docker(['image', 'rm', ref]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
  return registry;
}

/** POST /images/{name}/push over the engine's socket with an X-Registry-Auth header. */
function enginePush(ref: string, auth: string): Promise<string> {
  const slash = ref.lastIndexOf(':');
  const [name, tag] = [ref.slice(0, slash), ref.slice(slash + 1)];
  return engineCall('POST', `/images/${encodeURIComponent(name)}/push?tag=${encodeURIComponent(tag)}`, auth);
}

/** One engine API call whose answer is a progress stream; an `error` in it rejects. */
async function engineCall(method: string, path: string, auth: string): Promise<string> {
  const { request } = await import('node:http');
  return new Promise<string>((resolve, reject) => {
    const req = request(
      { socketPath: DOCKER_SOCKET, method, path, headers: { 'X-Registry-Auth': auth } },
      (res) => {
        let body = '';
        res.on('data', (b: Buffer) => (body += b));
        res.on('end', () => {
          if (res.statusCode !== 200 || /"error"/.test(body))
            reject(new Error(`${path}: ${body.slice(-400)}`));
          else resolve(body);
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * A small busybox web image serving `content` on 8080 (labelled svc.test=<label> for cleanup);
 * its own layer differs per content, so two versions are two digests.
 */
export async function buildWebImage(
  tag: string,
  content: string,
  label: string,
  base: string,
): Promise<void> {
  const dockerfile = [
    `FROM ${base}`,
    `RUN mkdir -p /www && echo ${JSON.stringify(content)} > /www/index.html`,
    `LABEL svc.test=${label}`,
    'EXPOSE 8080',
    `CMD ["sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]`,
    '',
  ].join('\n');
  await docker(['build', '-q', '-t', tag, '-'], dockerfile);
}
