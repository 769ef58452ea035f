// `svc security-check` reads the configuration exactly as `svc serve` does (the service's
// environment file under the process environment) and never creates a database of its own.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { serve, runCli, cleanEnv, CLI, type Served } from '../_support/cli.js';
import { Client, ADMIN } from '../_support/server.js';

const dirs: string[] = [];
const running: Served[] = [];
after(async () => {
  for (const s of running) await s.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'svc-cli-'));
  dirs.push(d);
  return d;
}

/** The checklist as the CLI prints it: check title -> status word. */
function cliRows(stdout: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const m = /^(ok|info|WARNING|ERROR)\s+(\S.*?)\s{2,}/.exec(line);
    if (m) rows.set(m[2]!, m[1]!.toLowerCase());
  }
  return rows;
}

test('security-check where no service keeps its data: a clear error, and nothing is created', async () => {
  const root = await tempDir();
  const missing = join(root, 'not-here');
  for (const args of [['security-check'], ['security-check', '--show'], ['security-check', '--undo']]) {
    const r = await runCli(args, { SVC_DATA_DIR: missing });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /no service database at .*not-here\/svc\.db; nothing was changed/);
    assert.equal(existsSync(missing), false, `${args.join(' ')} created ${missing}`);
  }
  // The default ./data, relative to wherever the operator happens to be.
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      [CLI, 'security-check'],
      { cwd: root, env: cleanEnv({}), timeout: 60_000 },
      (err, _o, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr: String(stderr) }),
    ),
  );
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no service database/);
  assert.deepEqual(await readdir(root), [], 'nothing created under the working directory');
});

test('security-check agrees with the running service: both read the service environment file', async () => {
  const root = await tempDir();
  const dataDir = join(root, 'data');
  const accessLog = join(root, 'access.log');
  await writeFile(accessLog, '');
  const envFile = join(root, 'svc.env');
  await writeFile(
    envFile,
    [
      '# the service environment, as systemd hands it to svc serve',
      `SVC_DATA_DIR=${dataDir}`,
      'SVC_PASSWORD_COST=12',
      `export SVC_ACCESS_LOG="${accessLog}"`,
      "SVC_METRICS_TOKEN='a-long-metrics-token-0123'",
      'SVC_EXPOSURE=public',
      'SVC_BASE_DOMAIN=apps.example.com',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const s = await serve({ SVC_ENV_FILE: envFile });
  running.push(s);
  const c = new Client(s.url);
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  assert.equal((await c.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
  assert.equal((await c.req('POST', '/api/auth/login', ADMIN)).status, 200);

  const apiRows = async () =>
    new Map<string, string>(
      (await c.req('GET', '/api/security/posture')).body.items
        .filter((i: { code: string }) => i.code !== 'host_ports' && i.code !== 'base_domain')
        .map((i: { title: string; status: string }) => [i.title, i.status]),
    );
  const shown = await runCli(['security-check', '--show'], { SVC_ENV_FILE: envFile });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`Service data: ${dataDir}; configuration from ${envFile}`));
  const cli = cliRows(shown.stdout);
  const api = await apiRows();
  for (const [title, status] of api)
    assert.equal(
      cli.get(title),
      status,
      `${title}: CLI ${cli.get(title)}, service ${status}\n${shown.stdout}`,
    );
  // Whether the base domain is served over HTTPS is known to the running service (its proxy) only:
  // the CLI says so instead of guessing.
  assert.equal(cli.get('Base domain'), 'info', shown.stdout);
  assert.equal(api.get('Metrics token'), 'ok');
  assert.equal(api.get('Master key'), 'warning');
  assert.equal(api.get('Firewall'), 'warning');

  // The opt-out lands where the service reads it.
  const optOut = await runCli(['security-check'], { SVC_ENV_FILE: envFile });
  assert.equal(optOut.code, 0, optOut.stderr);
  assert.equal((await apiRows()).get('Firewall'), 'info');
  assert.equal(cliRows(optOut.stdout).get('Firewall'), 'info');
  const undo = await runCli(['security-check', '--undo'], { SVC_ENV_FILE: envFile });
  assert.equal(undo.code, 0, undo.stderr);
  assert.equal((await apiRows()).get('Firewall'), 'warning');

  // The process environment wins over the file, for the CLI as for the service.
  const elsewhere = await runCli(['security-check', '--show'], {
    SVC_ENV_FILE: envFile,
    SVC_DATA_DIR: join(root, 'other'),
  });
  assert.equal(elsewhere.code, 1);
  assert.equal(existsSync(join(root, 'other')), false);
});
