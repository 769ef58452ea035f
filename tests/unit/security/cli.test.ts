// The CLI helpers against a temp root: nothing under the real /etc or /run is touched.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile, chmod } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { securityAgent, securityCheck, type CmdRunner, type CliIo } from '../../../runtime/security-cli.js';
import { evaluatePosture } from '#lib/security/posture.js';
import { readOptOut } from '#lib/security/opt-out.js';
import { tempDir } from './_helpers.js';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups) await c();
});

function io(): CliIo & { outLines: string[]; errLines: string[] } {
  const outLines: string[] = [];
  const errLines: string[] = [];
  return { outLines, errLines, out: (l) => outLines.push(l), err: (l) => errLines.push(l) };
}

async function root(name: string): Promise<string> {
  const { dir, cleanup } = await tempDir(name);
  cleanups.push(cleanup);
  return dir;
}

const ENV_BEFORE = [
  '# svc service environment',
  'SVC_MASTER_KEY="abc def"',
  "SVC_WEIRD='x=$y # not a comment'",
  'export SVC_SECURITY_AGENT=false',
  '',
  'SVC_PORT=9393',
  '',
].join('\n');

test('security-agent on/status/off without systemd: cron entry, env line, first real snapshot', async () => {
  const r = await root('cli-cron');
  const envFile = join(r, 'etc/svc/svc.env');
  await mkdir(join(r, 'etc/svc'), { recursive: true });
  await writeFile(envFile, ENV_BEFORE);
  await chmod(envFile, 0o640);

  const a = io();
  assert.equal(
    await securityAgent('on', a, { root: r, fail2banSocket: join(r, 'no-f2b.sock') }),
    0,
    a.errLines.join('\n'),
  );
  const cron = await readFile(join(r, 'etc/cron.d/svc-security-agent'), 'utf8');
  assert.match(
    cron,
    /^\* \* \* \* \* root \/\S+ \/\S+\/runtime\/security-agent\.js --out \S+\/var\/lib\/svc\/security --fail2ban-socket \S+no-f2b\.sock >\/dev\/null 2>&1$/m,
  );
  assert.equal((await stat(join(r, 'etc/cron.d/svc-security-agent'))).mode & 0o777, 0o644);
  const env = await readFile(envFile, 'utf8');
  assert.equal(env, ENV_BEFORE.replace('export SVC_SECURITY_AGENT=false', 'SVC_SECURITY_AGENT=true'));
  assert.equal((await stat(envFile)).mode & 0o777, 0o640, 'mode kept');
  assert.ok(
    existsSync(join(r, 'var/lib/svc/security/host-snapshot.json')),
    a.outLines.join('\n') + a.errLines.join('\n'),
  );

  const s = io();
  assert.equal(await securityAgent('status', s, { root: r }), 0);
  const status = s.outLines.join('\n');
  assert.match(status, /Schedule:\s+cron /);
  assert.match(status, /SVC_SECURITY_AGENT=true/);
  assert.match(status, /Snapshot:\s+\S+host-snapshot\.json, written \d+s ago/);
  assert.match(status, /Firewall:/);
  assert.match(status, /fail2ban:\s+(not installed|NOT RUNNING)/);

  const o = io();
  assert.equal(await securityAgent('off', o, { root: r }), 0);
  assert.equal(existsSync(join(r, 'etc/cron.d/svc-security-agent')), false);
  assert.equal(existsSync(join(r, 'var/lib/svc/security/host-snapshot.json')), false);
  assert.equal(
    await readFile(envFile, 'utf8'),
    ENV_BEFORE.replace('export SVC_SECURITY_AGENT=false', 'SVC_SECURITY_AGENT=false'),
  );

  const s2 = io();
  await securityAgent('status', s2, { root: r });
  assert.match(s2.outLines.join('\n'), /Schedule:\s+not installed/);
  assert.match(s2.outLines.join('\n'), /Snapshot:\s+unavailable/);
});

test('security-agent on/off with systemd: units written, timer enabled and disabled through systemctl', async () => {
  const r = await root('cli-systemd');
  await mkdir(join(r, 'run/systemd/system'), { recursive: true });
  const calls: string[] = [];
  const run: CmdRunner = async (cmd, args) => {
    calls.push([cmd, ...args].join(' '));
    return { code: 0, stdout: args[0] === 'is-active' ? 'active\n' : '', stderr: '' };
  };
  const a = io();
  assert.equal(await securityAgent('on', a, { root: r, run }), 0, a.errLines.join('\n'));
  assert.deepEqual(calls, [
    'systemctl daemon-reload',
    'systemctl enable --now svc-security-agent.timer',
    'systemctl start svc-security-agent.service',
  ]);
  const service = await readFile(join(r, 'etc/systemd/system/svc-security-agent.service'), 'utf8');
  assert.match(service, /^Type=oneshot$/m);
  assert.match(service, /^ExecStart=\/\S+ \/\S+security-agent\.js --out \S+\/var\/lib\/svc\/security$/m);
  const timer = await readFile(join(r, 'etc/systemd/system/svc-security-agent.timer'), 'utf8');
  assert.match(timer, /^OnCalendar=\*:\*:00$/m);
  assert.match(timer, /^WantedBy=timers\.target$/m);
  assert.equal(existsSync(join(r, 'etc/cron.d/svc-security-agent')), false);
  assert.equal(
    await readFile(join(r, 'etc/svc/svc.env'), 'utf8'),
    'SVC_SECURITY_AGENT=true\n',
    'env file created',
  );
  assert.equal((await stat(join(r, 'etc/svc/svc.env'))).mode & 0o777, 0o600);

  const s = io();
  await securityAgent('status', s, { root: r, run });
  assert.match(s.outLines.join('\n'), /Schedule:\s+systemd timer svc-security-agent\.timer \(active\)/);

  calls.length = 0;
  assert.equal(await securityAgent('off', io(), { root: r, run }), 0);
  assert.deepEqual(calls, ['systemctl disable --now svc-security-agent.timer', 'systemctl daemon-reload']);
  assert.equal(existsSync(join(r, 'etc/systemd/system/svc-security-agent.timer')), false);
  assert.equal(existsSync(join(r, 'etc/systemd/system/svc-security-agent.service')), false);

  const failing: CmdRunner = async () => ({ code: 1, stdout: '', stderr: 'Failed to connect to bus' });
  const f = io();
  assert.equal(await securityAgent('on', f, { root: r, run: failing }), 1);
  assert.match(f.errLines.join('\n'), /Failed to connect to bus/);
});

test('security-agent refuses unusual paths and bad subcommands', async () => {
  const r = await root('cli-bad');
  const a = io();
  assert.equal(await securityAgent('on', a, { root: r, securityDir: join(r, 'a dir; rm -rf') }), 1);
  assert.match(a.errLines.join('\n'), /unusual characters/);
  assert.equal(existsSync(join(r, 'etc/cron.d/svc-security-agent')), false);
});

test('security-check records the opt-out, prints the checklist, --undo removes it', async () => {
  const r = await root('cli-check');
  const dataDir = join(r, 'data');
  const provider = () =>
    evaluatePosture({
      masterKeySet: true,
      metricsTokenSet: false,
      exposure: 'public',
      baseDomain: 'example.test',
      agentEnabled: false,
      optedOut: readOptOut(dataDir),
      snapshot: null,
      tailer: null,
      monitorEnabled: true,
      hostPorts: [],
    });
  const a = io();
  assert.equal(await securityCheck('record', a, provider, { dataDir }), 0);
  assert.equal(readOptOut(dataDir), true);
  const text = a.outLines.join('\n');
  assert.match(text, /Recorded: firewall and fail2ban checks disabled by operator/);
  assert.match(text, /info\s+Firewall\s+disabled by operator/);
  assert.match(text, /info\s+fail2ban\s+disabled by operator/);
  assert.match(text, /WARNING\s+Metrics token/);

  const s = io();
  assert.equal(await securityCheck('show', s, provider, { dataDir }), 0);
  assert.equal(readOptOut(dataDir), true);
  assert.match(s.outLines[0], /Opt-out: recorded/);

  const u = io();
  assert.equal(await securityCheck('undo', u, provider, { dataDir }), 0);
  assert.equal(readOptOut(dataDir), false);
  assert.match(u.outLines.join('\n'), /WARNING\s+Firewall\s+Firewall state is unknown/);
  // Usage errors (an unknown option, --undo with --show) are the parser's: tests/runtime/cli-help.e2e.test.ts.
});
