// What `svc serve` says once it listens. On a terminal (a real pseudo-terminal from util-linux's
// `script`): a banner in words with the setup link that works, where the data and the key are, and
// what is missing (an engine socket nobody serves, a Caddy admin port nobody listens on, no base
// domain) with how to get it; no JSON "listening" line. Through a pipe: JSON lines, the first one
// "listening", and one warning per missing part.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, cleanEnv, serve } from '../_support/cli.js';
import { Client, ADMIN } from '../_support/server.js';
import { freePort } from '../_support/net.js';
import { poll } from '../_support/wait.js';
import { missing } from '../_support/ci.js';
import { SERVE_NODE_OPTIONS } from '#lib/install/texts.js';

const SCRIPT = '/usr/bin/script';
const dirs: string[] = [];
const procs: ChildProcess[] = [];
after(async () => {
  for (const p of procs) if (p.exitCode === null && p.pid) process.kill(-p.pid, 'SIGTERM');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function vars(): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-banner-'));
  dirs.push(dir);
  return {
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_PASSWORD_COST: '12',
    SVC_SECURITY_MONITOR: 'false',
    SVC_DOCKER_SOCKET: join(dir, 'no-engine.sock'),
    // A port nothing listens on: Caddy is "not running".
    SVC_CADDY_ADMIN: `http://127.0.0.1:${await freePort()}`,
    SVC_ACCESS_LOG: join(dir, 'access.log'),
  };
}

test('on a terminal: a banner with the working setup link, the data and key, and what is missing with its fix', async (t) => {
  if (!existsSync(SCRIPT)) return void missing(t, `${SCRIPT} is not installed (apt-get install bsdutils)`);
  const v = await vars();
  // `script` runs a command line through a shell: a constant one, the paths come as variables.
  const proc = spawn(
    SCRIPT,
    ['-qfec', 'exec "$BANNER_NODE" $BANNER_NODE_OPTIONS "$BANNER_CLI" serve', '/dev/null'],
    {
      env: cleanEnv({
        ...v,
        BANNER_NODE: process.execPath,
        BANNER_NODE_OPTIONS: SERVE_NODE_OPTIONS.join(' '),
        BANNER_CLI: CLI,
      }),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    },
  );
  procs.push(proc);
  let out = '';
  proc.stdout!.on('data', (b: Buffer) => (out += b.toString('utf8')));
  const text = await poll(
    'the banner',
    () => (/Stop with Ctrl\+C/.test(out) ? out.replace(/\r/g, '') : null),
    60_000,
    50,
  );
  const url = /svc \S+ is running at (http:\/\/127\.0\.0\.1:\d+) \(started in \d+ ms\)/.exec(text)?.[1];
  assert.ok(url, text);
  const token = (await readFile(join(v.SVC_DATA_DIR, 'setup.token'), 'utf8')).trim();
  assert.ok(text.includes(`Set up:      open ${url}/#token=${token}`), text);
  assert.ok(
    text.includes(`Data:        ${v.SVC_DATA_DIR} (SQLite, ${join(v.SVC_DATA_DIR, 'svc.db')})`),
    text,
  );
  assert.ok(
    text.includes(`Master key:  ${join(v.SVC_DATA_DIR, 'master.key')} (generated now: back it up`),
    text,
  );
  assert.match(
    text,
    new RegExp(
      `- Docker engine \\(nothing answers at ${v.SVC_DOCKER_SOCKET.replace(/[.]/g, '\\.')}\\)\n +Apps cannot run`,
    ),
  );
  assert.ok(text.includes(`- Caddy (its admin API does not answer at ${v.SVC_CADDY_ADMIN})`), text);
  assert.match(text, /- Base domain\n +Apps get no automatic host/);
  assert.doesNotMatch(text, /"msg":"listening/, 'no JSON listening line on a terminal');
  // The link's token is the one that opens setup.
  const c = new Client(url);
  assert.equal((await c.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
  process.kill(-proc.pid!, 'SIGTERM');
  await poll('the banner run to stop', () => proc.exitCode !== null || proc.signalCode !== null, 30_000, 50);
});

test('through a pipe: JSON lines, "listening" first, one warning per missing part', async () => {
  const v = await vars();
  const s = await serve(v);
  try {
    assert.match(s.lines[0]!.msg, /^listening on /);
    const warned = await poll(
      'the missing parts',
      () => {
        const m = s.lines.filter((l) => typeof l.missing === 'string');
        return m.length >= 3 ? m : null;
      },
      15_000,
      50,
    );
    assert.deepEqual(
      warned.map((l) => l.missing.split(' ')[0]),
      ['Docker', 'Caddy', 'Base'],
    );
    assert.ok(
      warned.every((l) => l.level === 40),
      'warnings',
    );
    assert.ok(!s.lines.some((l) => typeof l.raw === 'string' && /is running at/.test(l.raw)), 'no banner');
  } finally {
    await s.stop();
  }
});
