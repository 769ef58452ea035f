// The live branch of the install and uninstall plans (systemctl, sysctl), which a machine without a
// booted systemd cannot run: the plans are data, so their commands are checked as data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  planInstall,
  planUninstall,
  supportedOs,
  parseOsRelease,
  type HostState,
  type PathState,
} from '#lib/install/plan.js';
import { installedPackages } from '#lib/install/state.js';
import { parseListeners } from '#lib/doctor/checks.js';

const hex = (n: number) => '0'.repeat(n * 2);

function liveState(over: Partial<HostState> = {}, paths: Record<string, PathState | null> = {}): HostState {
  return {
    live: true,
    os: parseOsRelease('ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'),
    paths: {
      '/etc/systemd/system/multi-user.target.wants/caddy.service': {
        type: 'symlink',
        mode: 0o777,
        uid: 0,
        target: '/lib/systemd/system/caddy.service',
      },
      ...paths,
    },
    packages: new Set(['docker.io', 'caddy']),
    systemd: true,
    active: { 'caddy.service': true, 'docker.service': true },
    sysctl: { 'net.ipv4.tcp_migrate_req': '0' },
    ...over,
  };
}

const commands = (s: HostState) =>
  planInstall({ node: '/usr/bin/node', cli: '/opt/svc/dist/runtime/cli.js' }, s, hex)
    .changes.filter((c) => c.kind === 'command')
    .map((c) => (c.kind === 'command' ? c.argv.join(' ') : ''));

test('a live install sets the kernel value, swaps caddy for caddy-api, then enables and starts svc', () => {
  assert.deepEqual(commands(liveState()), [
    'sysctl -w net.ipv4.tcp_migrate_req=1',
    'systemctl daemon-reload',
    'systemctl disable --now caddy.service',
    'systemctl enable --now caddy-api.service',
    'systemctl enable --now svc.service',
  ]);
});

test('a live install where everything is enabled only starts what is stopped, and restarts svc for a new unit', () => {
  const enabled = (u: string, target: string) => ({
    [`/etc/systemd/system/multi-user.target.wants/${u}`]: {
      type: 'symlink' as const,
      mode: 0o777,
      uid: 0,
      target,
    },
  });
  const s = liveState(
    {
      active: { 'svc.service': true, 'caddy-api.service': false },
      sysctl: { 'net.ipv4.tcp_migrate_req': '1' },
    },
    {
      ...enabled('caddy-api.service', '/lib/systemd/system/caddy-api.service'),
      ...enabled('svc.service', '/etc/systemd/system/svc.service'),
      '/etc/systemd/system/multi-user.target.wants/caddy.service': null,
    },
  );
  assert.deepEqual(commands(s), [
    'systemctl daemon-reload',
    'systemctl start caddy-api.service',
    'systemctl restart svc.service',
  ]);
});

test('without systemd running, a live install refuses before any change; a kernel without the setting is a note', () => {
  assert.throws(() => commands(liveState({ systemd: false })), /systemd is not running/);
  const plan = planInstall(
    { node: '/usr/bin/node', cli: '/opt/x.js' },
    liveState({ sysctl: { 'net.ipv4.tcp_migrate_req': null } }),
    hex,
  );
  assert.ok(plan.notes.some((n) => /5\.14/.test(n)));
  assert.throws(
    () => planInstall({ node: '/usr/bin/node', cli: '/opt/x y.js' }, liveState(), hex),
    /unusual characters/,
  );
  assert.throws(
    () => planInstall({ node: '/usr/bin/node', cli: '/root/svc/dist/runtime/cli.js' }, liveState(), hex),
    /ProtectHome/,
  );
});

test('a live uninstall disables and removes only what install recorded', () => {
  const link = (u: string) => ({
    [`/etc/systemd/system/multi-user.target.wants/${u}`]: { type: 'symlink' as const, mode: 0o777, uid: 0 },
  });
  const file: PathState = { type: 'file', mode: 0o644, uid: 0, text: '' };
  const s = liveState(
    { active: { 'svc.service': true } },
    {
      ...link('svc.service'),
      ...link('caddy-api.service'),
      '/etc/systemd/system/multi-user.target.wants/caddy.service': null,
      '/etc/systemd/system/svc.service': file,
      '/etc/sysctl.d/60-svc.conf': file,
      '/etc/svc/install.json': {
        ...file,
        text: JSON.stringify({
          enabled: ['caddy-api.service', 'svc.service', 'bad name'],
          disabled: ['caddy.service'],
        }),
      },
      '/etc/svc/svc.env': file,
    },
  );
  const plan = planUninstall({ purge: false }, s);
  assert.deepEqual(
    plan.changes.map((c) =>
      c.kind === 'command' ? c.argv.join(' ') : `${c.kind} ${'path' in c ? c.path : ''}`,
    ),
    [
      'systemctl disable --now svc.service',
      'remove /etc/systemd/system/svc.service',
      'systemctl daemon-reload',
      'remove /etc/sysctl.d/60-svc.conf',
      'systemctl disable --now caddy-api.service',
      'systemctl enable --now caddy.service',
      'remove /etc/svc/install.json',
    ],
  );
});

test('supported systems, dpkg status and ss output are read as they are written', () => {
  assert.equal(
    supportedOs(parseOsRelease('ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"')).ok,
    true,
  );
  assert.equal(supportedOs(parseOsRelease('ID=ubuntu\nVERSION_ID="20.04"')).ok, false);
  assert.equal(supportedOs(parseOsRelease('ID=debian\nVERSION_ID="11"')).ok, false);
  assert.equal(supportedOs(null).ok, false);
  const status =
    'Package: caddy\nStatus: install ok installed\nVersion: 2.6\n\nPackage: docker.io\nStatus: deinstall ok config-files\n\nPackage: git\nStatus: install ok installed\n';
  assert.deepEqual([...installedPackages(status)].sort(), ['caddy', 'git']);
  const ss =
    'LISTEN 0      4096         *:443        *:*    users:(("caddy",pid=812,fd=9))\nLISTEN 0 511 0.0.0.0:80 0.0.0.0:* users:(("nginx",pid=1,fd=6),("nginx",pid=2,fd=6))\nLISTEN 0 4096 [::1]:2019 [::]:*\n';
  assert.deepEqual(parseListeners(ss), [
    { port: 443, address: '*', process: 'caddy' },
    { port: 80, address: '0.0.0.0', process: 'nginx' },
    { port: 2019, address: '[::1]', process: null },
  ]);
});

test('a live install that writes the admin-socket drop-in restarts a running caddy-api; uninstall removes the drop-in', () => {
  const enabled = (u: string) => ({
    [`/etc/systemd/system/multi-user.target.wants/${u}`]: { type: 'symlink' as const, mode: 0o777, uid: 0 },
  });
  const s = liveState(
    {
      active: { 'svc.service': true, 'caddy-api.service': true },
      sysctl: { 'net.ipv4.tcp_migrate_req': '1' },
    },
    {
      ...enabled('caddy-api.service'),
      ...enabled('svc.service'),
      '/etc/systemd/system/multi-user.target.wants/caddy.service': null,
    },
  );
  assert.deepEqual(commands(s), [
    'systemctl daemon-reload',
    'systemctl restart caddy-api.service',
    'systemctl restart svc.service',
  ]);

  const file: PathState = { type: 'file', mode: 0o644, uid: 0, text: '' };
  const dropIn = {
    '/etc/systemd/system/caddy-api.service.d': { type: 'dir' as const, mode: 0o40755, uid: 0 },
    '/etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf': file,
  };
  const describe = (p: ReturnType<typeof planUninstall>) =>
    p.changes.map((c) =>
      c.kind === 'command' ? c.argv.join(' ') : `${c.kind} ${'path' in c ? c.path : ''}`,
    );
  const installed = liveState(
    {},
    {
      ...enabled('caddy-api.service'),
      '/etc/systemd/system/multi-user.target.wants/caddy.service': null,
      ...dropIn,
      '/etc/svc/install.json': { ...file, text: '{"enabled":["caddy-api.service"]}' },
    },
  );
  const u = planUninstall({ purge: false }, installed);
  assert.deepEqual(describe(u), [
    'remove /etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf',
    'rmdir /etc/systemd/system/caddy-api.service.d',
    'systemctl daemon-reload',
    'systemctl disable --now caddy-api.service',
    'remove /etc/svc/install.json',
  ]);
  // A caddy-api enabled before install stays enabled, and keeps the drop-in its autosaved config needs.
  const before = liveState(
    {},
    {
      ...enabled('caddy-api.service'),
      '/etc/systemd/system/multi-user.target.wants/caddy.service': null,
      ...dropIn,
    },
  );
  const kept = planUninstall({ purge: false }, before);
  assert.deepEqual(describe(kept), []);
  assert.ok(
    kept.notes.some((n) =>
      /Kept \/etc\/systemd\/system\/caddy-api\.service\.d\/svc-admin-socket\.conf/.test(n),
    ),
  );
});
