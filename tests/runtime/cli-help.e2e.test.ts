// The `svc` command has one parser (runtime/cli/parser.ts) over a table of declarations: every
// command answers --help (or -h) with its usage and does nothing else; a usage error exits 2 with
// the message and the usage; a failure exits 1 with one line on stderr. The real CLI is run for
// every command of the table, with a master key in the environment and a data directory that
// must stay empty (`key show --help` once printed the key, `rollback-upgrade --help` tried to roll
// back, `operators reset --help` looked for an operator named `--help`).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../_support/cli.js';
import { TEST_MASTER_KEY } from '../_support/server.js';
import { COMMANDS } from '../../runtime/cli/table.js';
import { command, runCommand, UsageError } from '../../runtime/cli/parser.js';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function sandbox(): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-cli-help-'));
  dirs.push(dir);
  // Port 1: nothing answers there, so no command mistakes another test's service for ours.
  return { SVC_DATA_DIR: join(dir, 'data'), SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_PORT: '1' };
}

const lines = (s: string) => s.split('\n').filter((l) => l.length > 0);

test('every command answers --help and -h with its usage, prints no secret and does nothing else', async () => {
  const vars = await sandbox();
  assert.ok(COMMANDS.length >= 15, 'the whole table');
  for (const c of COMMANDS) {
    // Help wins wherever it stands, before or after other arguments, long or short.
    for (const argv of [
      [...c.name.split(' '), '--help'],
      [...c.name.split(' '), 'some-arg', '-h'],
    ]) {
      const r = await runCli(argv, vars, 20_000);
      const what = `svc ${argv.join(' ')}`;
      assert.equal(r.code, 0, `${what}: ${r.stderr}`);
      assert.equal(r.stderr, '', `${what} wrote to stderr`);
      assert.ok(r.stdout.startsWith(`usage: svc ${c.name}`), `${what}: ${r.stdout}`);
      assert.match(r.stdout, /-h, --help\s+print this help and do nothing else/);
      assert.ok(!r.stdout.includes(TEST_MASTER_KEY), `${what} printed the master key`);
    }
  }
  // Nothing was created: no data directory, no database, no key file, no token.
  assert.deepEqual(await readdir(join(vars.SVC_DATA_DIR!, '..')), []);
});

test('svc --help lists every command; a group answers --help with its subcommands', async () => {
  const r = await runCli(['--help'], {});
  assert.equal(r.code, 0);
  for (const c of COMMANDS) assert.ok(r.stdout.includes(`svc ${c.name}`), c.name);
  const group = await runCli(['operators', '--help'], {});
  assert.equal(group.code, 0);
  assert.match(group.stdout, /^usage: svc operators <subcommand>/);
  assert.match(group.stdout, /svc operators reset <username>/);
  const none = await runCli([], {});
  assert.equal(none.code, 2, 'no command is a usage error');
});

test('usage errors exit 2 with the message and the usage line, and do nothing', async () => {
  const vars = await sandbox();
  for (const [argv, message] of [
    [['key', 'show', '--json'], /Unknown option '--json'/],
    [['key', 'show', 'extra'], /unexpected argument "extra"/],
    [['rollback-upgrade', 'now'], /unexpected argument "now"/],
    [['operators', 'reset'], /the username is missing/],
    [['operators', 'reset', 'a', 'b'], /too many arguments/],
    [['security-check', '--force'], /Unknown option '--force'/],
    [['security-check', '--undo', '--show'], /--undo and --show exclude each other/],
    [['security-agent', 'sideways'], /unknown subcommand sideways/],
    [['restore-instance', '/nowhere.tar'], /--key must be the master key/],
    [['install', '--root'], /--root/],
    [['bogus'], /unknown command "bogus"/],
  ] as const) {
    const r = await runCli([...argv], vars, 20_000);
    assert.equal(r.code, 2, `svc ${argv.join(' ')}: ${r.stdout} ${r.stderr}`);
    assert.match(r.stderr, message, argv.join(' '));
    assert.match(r.stderr, /usage: svc /);
    assert.equal(r.stdout, '');
  }
  assert.deepEqual(await readdir(join(vars.SVC_DATA_DIR!, '..')), []);
});

test('a failure exits 1 with one line on stderr', async () => {
  const vars = await sandbox();
  const { SVC_MASTER_KEY: _key, ...noKey } = vars;
  for (const [argv, env, message] of [
    [['setup-token'], vars, /^svc setup-token: no setup token/],
    [['key', 'show'], noKey, /^svc key show: no master key: SVC_MASTER_KEY is not set/],
    [['operators', 'reset', 'ada'], vars, /^svc operators: no service database at /],
    [['security-check', '--show'], vars, /^svc security-check: no service database at /],
  ] as const) {
    const r = await runCli([...argv], env, 20_000);
    assert.equal(r.code, 1, `svc ${argv.join(' ')}: ${r.stderr}`);
    assert.equal(lines(r.stderr).length, 1, `one line: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});

test('a new command is one declaration: options, arguments and `--` need no change to the parser', async () => {
  const seen: unknown[] = [];
  const run = command({
    name: 'run',
    summary: 'run a command in an app',
    usage: '<app> [--service S] -- <cmd...>',
    args: { min: 1, max: 1, names: 'the app' },
    passthrough: true,
    options: {
      service: { type: 'string', short: 's', value: 'S', description: 'the service' },
      json: { type: 'boolean', description: 'print JSON' },
    },
    run({ values, args, rest }) {
      seen.push({ service: values.service, json: values.json, args, rest });
      if (args[0] === 'fail') throw new Error('the app answered 500\nand more');
      if (args[0] === 'misused') throw new UsageError('no such app here');
      return 7;
    },
  });
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l) };
  assert.equal(await runCommand([run], ['run', 'shop', '-s', 'web', '--', 'ls', '--help', '-la'], io), 7);
  assert.deepEqual(seen.pop(), {
    service: 'web',
    json: undefined,
    args: ['shop'],
    rest: ['ls', '--help', '-la'],
  });
  assert.equal(await runCommand([run], ['run', 'shop', '--help'], io), 0, 'help before -- is help');
  assert.equal(seen.length, 0);
  assert.equal(await runCommand([run], ['run', 'fail', '--', 'x'], io), 1);
  assert.deepEqual(err, ['svc run: the app answered 500 and more']);
  assert.equal(await runCommand([run], ['run', 'misused'], io), 2);
  assert.equal(await runCommand([run], ['run'], io), 2);
  assert.match(err.join('\n'), /svc run: the app is missing/);
});
