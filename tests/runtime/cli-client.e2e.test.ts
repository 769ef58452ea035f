// The `svc` command as a client of a remote instance, run as a child process against a real
// server: login keeps the token in a 0600 file, SVC_URL/SVC_TOKEN override it, apps, env (secrets
// masked), export and apply (dry run changes nothing), and the exit statuses (2 usage, 1 failure
// with one line on stderr). Deploy and logs need the engine: tests/engine/config-file.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, cleanEnv, runCli } from '../_support/cli.js';
import { adminClient, apiToken, startTestServer, type Client, type TestServer } from '../_support/server.js';

let s: TestServer;
let admin: Client;
let token = '';
let home = '';
let vars: Record<string, string>;

before(async () => {
  s = await startTestServer();
  admin = await adminClient(s);
  token = await apiToken(admin, 'cli');
  home = await mkdtemp(join(tmpdir(), 'svc-cli-client-'));
  vars = { HOME: home, XDG_CONFIG_HOME: join(home, '.config') };
  const made = await admin.req('POST', '/api/apps', {
    name: 'cli-web',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(made.status, 201, made.text);
});
after(async () => {
  await s?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** The CLI with `input` on its standard input. */
function withInput(
  args: string[],
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], {
      env: cleanEnv(vars),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b) => (stdout += b));
    p.stderr.on('data', (b) => (stderr += b));
    const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    p.stdin.end(input);
  });
}

test('before login: a failure naming what to do, exit 1, one line', async () => {
  const r = await runCli(['apps'], vars);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, 'svc apps: not logged in: run `svc login <url>`, or set SVC_URL and SVC_TOKEN\n');
});

test('login checks the token, keeps it in a 0600 file; a refused token keeps nothing', async () => {
  const refused = await withInput(['login', s.url], 'svc_not-a-real-token\n');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^svc login: the token was refused: /);
  await assert.rejects(stat(join(home, '.config', 'svc', 'credentials.json')));
  const r = await withInput(['login', `${s.url}/`], `${token}\n`);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^logged in to http:\/\/127\.0\.0\.1:\d+ as admin/);
  const path = join(home, '.config', 'svc', 'credentials.json');
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.deepEqual(JSON.parse(await readFile(path, 'utf8')), { url: s.url, token });
  assert.equal(r.stdout.includes(token), false, 'the token is not printed');
});

test('apps lists the instance, as a table and as JSON', async () => {
  const table = await runCli(['apps'], vars);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^NAME\s+STATUS\s+SOURCE\s+DEPLOYED$/m);
  assert.match(table.stdout, /^cli-web\s+\S+\s+nginx:1\.27\s+-$/m);
  const json = await runCli(['apps', '--json'], vars);
  assert.deepEqual(
    (JSON.parse(json.stdout) as Array<{ name: string }>).map((a) => a.name),
    ['cli-web'],
  );
});

test('SVC_URL and SVC_TOKEN override the credentials file', async () => {
  const bad = await runCli(['apps'], { ...vars, SVC_TOKEN: 'svc_wrong' });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^svc apps: listing apps: /);
  const elsewhere = await runCli(['apps'], { ...vars, SVC_URL: 'http://127.0.0.1:1' });
  assert.equal(elsewhere.code, 1);
  assert.match(elsewhere.stderr, /^svc apps: cannot reach http:\/\/127\.0\.0\.1:1/);
  assert.equal(elsewhere.stderr.trim().split('\n').length, 1);
});

test('env sets, lists with secrets masked, and unsets', async () => {
  for (const args of [
    ['env', 'cli-web', 'set', 'MODE=prod'],
    ['env', 'cli-web', 'set', 'API_KEY=k-secret-1', '--secret'],
  ]) {
    const r = await runCli(args, vars);
    assert.equal(r.code, 0, r.stderr);
  }
  const list = await runCli(['env', 'cli-web'], vars);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^MODE\s+prod$/m);
  assert.match(list.stdout, /^API_KEY\s+\*+$/m);
  assert.equal(list.stdout.includes('k-secret-1'), false);
  const json = JSON.parse((await runCli(['env', 'cli-web', '--json'], vars)).stdout);
  assert.deepEqual(json, [
    { key: 'API_KEY', secret: true, value: null },
    { key: 'MODE', secret: false, value: 'prod' },
  ]);
  const unset = await runCli(['env', 'cli-web', 'unset', 'MODE'], vars);
  assert.equal(unset.code, 0, unset.stderr);
  const gone = await runCli(['env', 'cli-web', 'unset', 'MODE'], vars);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /^svc env: removing MODE: /);
  for (const args of [
    ['env', 'cli-web', 'frob'],
    ['env', 'cli-web', 'set', 'NOEQUALS'],
    ['env', 'cli-web', 'set'],
  ]) {
    const r = await runCli(args, vars);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  const noApp = await runCli(['env', 'no-such-app'], vars);
  assert.equal(noApp.code, 1);
  assert.equal(noApp.stderr, 'svc env: no app named "no-such-app"\n');
});

test('export writes the file; apply --dry-run prints the changes and changes nothing; apply makes them', async () => {
  const exported = await runCli(['export', 'cli-web'], vars);
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stdout, /^name: cli-web$/m);
  assert.match(exported.stdout, /^ {2}API_KEY: \$\{API_KEY\}$/m);
  assert.equal(exported.stdout.includes('k-secret-1'), false);
  const file = join(home, 'svc.yaml');
  await writeFile(file, exported.stdout);
  const same = await runCli(['apply', '-f', file, '--dry-run'], vars);
  assert.equal(same.code, 0, same.stderr);
  assert.equal(same.stdout, 'no changes\ndry run: nothing was changed\n');
  await writeFile(file, exported.stdout + 'sleep_after_minutes: 30\n');
  const dry = await runCli(['apply', '-f', file, '--dry-run'], vars);
  assert.equal(dry.stdout, 'sleep_after_minutes: (none) -> 30\ndry run: nothing was changed\n');
  const json = JSON.parse((await runCli(['export', 'cli-web', '--format', 'json'], vars)).stdout);
  assert.equal(json.sleep_after_minutes, undefined, 'the dry run changed nothing');
  const real = await runCli(['apply', '-f', file], vars);
  assert.equal(real.code, 0, real.stderr);
  assert.equal(real.stdout, 'sleep_after_minutes: (none) -> 30\napplied to cli-web\n');
  const after = JSON.parse((await runCli(['export', 'cli-web', '--format', 'json'], vars)).stdout);
  assert.equal(after.sleep_after_minutes, 30);
  await writeFile(
    file,
    'name: cli-web\nsource: {type: image, image: nginx:1.27}\nservices:\n  app:\n    port: 0\n',
  );
  const refused = await runCli(['apply', '-f', file], vars);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^svc apply: applying: .*services\.app\.port/);
  assert.equal((await runCli(['apply'], vars)).code, 2, 'no -f');
  assert.equal((await runCli(['apply', '-f', join(home, 'nope.yaml')], vars)).code, 1);
  assert.equal((await runCli(['export', 'cli-web', '--format', 'toml'], vars)).code, 2);
});

test('deploy without an app is a usage error; an unknown app a failure', async () => {
  assert.equal((await runCli(['deploy'], vars)).code, 2);
  const r = await runCli(['deploy', 'no-such-app'], vars);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, 'svc deploy: no app named "no-such-app"\n');
});
