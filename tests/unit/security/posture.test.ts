import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AGENT_OFF_REASON,
  fail2banState,
  firewallState,
  parseHostSnapshot,
  readHostSnapshot,
  type HostSnapshot,
} from '#lib/security/snapshot.js';
import { evaluatePosture, type PostureInput } from '#lib/security/posture.js';
import { readOptOut, writeOptOut, optOutPath } from '#lib/security/opt-out.js';
import {
  parseFail2banJail,
  parseFail2banStatus,
  parseIptablesSave,
  parseNftRuleset,
  parseUfwStatus,
} from '#lib/security/collect.js';
import { formatPostureTable, postureSummary } from '#lib/security/format.js';
import { tempDir } from './_helpers.js';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups) await c();
});

const NOW = Date.UTC(2024, 5, 1, 12, 0, 0);

function snapshot(over: Partial<HostSnapshot> = {}): HostSnapshot {
  return {
    version: 1,
    generated_at: new Date(NOW - 30_000).toISOString(),
    firewall: {
      backend: 'ufw',
      installed: true,
      active: true,
      rules: ['Default: deny (incoming)', '22/tcp  ALLOW IN  Anywhere'],
    },
    fail2ban: {
      installed: true,
      active: true,
      jails: [
        { name: 'sshd', currently_banned: 2, total_banned: 9, banned_ips: ['192.0.2.7', '198.51.100.9'] },
      ],
    },
    ...over,
  };
}

function input(over: Partial<PostureInput> = {}): PostureInput {
  return {
    masterKeySet: true,
    metricsTokenSet: true,
    exposure: 'public',
    baseDomain: 'example.test',
    edge: {
      enabled: true,
      synced: true,
      controlDomain: 'svc.example.test',
      controlCertNotAfter: '2099-01-01T00:00:00.000Z',
    },
    agentEnabled: true,
    optedOut: false,
    snapshot: parseHostSnapshot(JSON.stringify(snapshot())),
    tailer: {
      reading: true,
      path: '/var/log/caddy/access.log',
      lines: 10,
      lastLineAt: new Date(NOW).toISOString(),
    },
    monitorEnabled: true,
    hostPorts: [],
    now: NOW,
    ...over,
  };
}

const rows = (i: PostureInput) => evaluatePosture(i).items;
const status = (i: PostureInput, code: string) =>
  rows(i)
    .filter((r) => r.code === code)
    .map((r) => r.status);

test('snapshot parser: good input gives the contract shapes', () => {
  const parsed = parseHostSnapshot(JSON.stringify(snapshot()));
  assert.deepEqual(firewallState(parsed, { agentEnabled: true, now: NOW }), {
    available: true,
    stale: false,
    generated_at: new Date(NOW - 30_000).toISOString(),
    backend: 'ufw',
    active: true,
    rules: ['Default: deny (incoming)', '22/tcp  ALLOW IN  Anywhere'],
  });
  assert.deepEqual(fail2banState(parsed, { agentEnabled: true, now: NOW }), {
    available: true,
    stale: false,
    generated_at: new Date(NOW - 30_000).toISOString(),
    jails: [
      { name: 'sshd', currently_banned: 2, total_banned: 9, banned_ips: ['192.0.2.7', '198.51.100.9'] },
    ],
  });
  const old = parseHostSnapshot(
    JSON.stringify(snapshot({ generated_at: new Date(NOW - 5 * 60_000 - 1).toISOString() })),
  );
  assert.equal((firewallState(old, { agentEnabled: true, now: NOW }) as { stale: boolean }).stale, true);
  assert.equal((fail2banState(old, { agentEnabled: true, now: NOW }) as { stale: boolean }).stale, true);
  const edge = parseHostSnapshot(
    JSON.stringify(snapshot({ generated_at: new Date(NOW - 5 * 60_000).toISOString() })),
  );
  assert.equal((firewallState(edge, { agentEnabled: true, now: NOW }) as { stale: boolean }).stale, false);
});

test('snapshot parser: garbage, truncation, binary and wrong types are unavailable, never a throw', () => {
  const good = JSON.stringify(snapshot());
  const bad: Array<string | Buffer> = [
    '',
    good.slice(0, good.length / 2),
    good.slice(0, good.indexOf('"fail2ban"')),
    Buffer.from([0x00, 0xff, 0xfe, 0x7b, 0x22, 0x80, 0x81]),
    Buffer.concat([Buffer.from(good), Buffer.from([0, 0, 0])]),
    'null',
    '[]',
    '"x"',
    '12',
    JSON.stringify({ ...snapshot(), version: 2 }),
    JSON.stringify({ ...snapshot(), generated_at: 'yesterday' }),
    JSON.stringify({ ...snapshot(), generated_at: 17 }),
  ];
  for (const b of bad) {
    const p = parseHostSnapshot(b);
    assert.equal(p.ok, false, `accepted ${String(b).slice(0, 40)}`);
    const fw = firewallState(p, { agentEnabled: true });
    assert.equal(fw.available, false);
    assert.ok(!fw.available && fw.reason.length > 0);
    assert.equal(fail2banState(p, { agentEnabled: true }).available, false);
  }
  // A damaged section only takes itself down.
  const sections: Array<[Partial<HostSnapshot> | Record<string, unknown>, 'firewall' | 'fail2ban', RegExp]> =
    [
      [{ firewall: undefined }, 'firewall', /firewall section is missing/],
      [{ firewall: { backend: 'pf', installed: true, active: true, rules: [] } }, 'firewall', /backend/],
      [{ firewall: { backend: 'ufw', installed: 'yes', active: true, rules: [] } }, 'firewall', /installed/],
      [
        { firewall: { backend: 'ufw', installed: true, active: true, rules: [1, 2] } },
        'firewall',
        /rules\[0\]/,
      ],
      [
        { firewall: { backend: 'ufw', installed: true, active: true, rules: 'all' } },
        'firewall',
        /rules is not a list/,
      ],
      [
        {
          fail2ban: {
            installed: true,
            active: true,
            jails: [{ name: 'sshd', currently_banned: -1, total_banned: 0, banned_ips: [] }],
          },
        },
        'fail2ban',
        /currently_banned/,
      ],
      [
        {
          fail2ban: {
            installed: true,
            active: true,
            jails: [{ name: 'sshd', currently_banned: 1.5, total_banned: 0, banned_ips: [] }],
          },
        },
        'fail2ban',
        /currently_banned/,
      ],
      [
        {
          fail2ban: {
            installed: true,
            active: true,
            jails: [{ name: '', currently_banned: 0, total_banned: 0, banned_ips: [] }],
          },
        },
        'fail2ban',
        /name/,
      ],
      [{ fail2ban: { installed: true, active: true, jails: {} } }, 'fail2ban', /jails is not a list/],
      [{ fail2ban: { installed: true, active: true, jails: [null] } }, 'fail2ban', /jails\[0\]/],
      [
        {
          fail2ban: {
            installed: true,
            active: true,
            jails: [{ name: 'x', currently_banned: 0, total_banned: 0, banned_ips: [{}] }],
          },
        },
        'fail2ban',
        /banned_ips\[0\]/,
      ],
    ];
  for (const [over, which, why] of sections) {
    const p = parseHostSnapshot(JSON.stringify({ ...snapshot(), ...over }));
    assert.equal(p.ok, true);
    const broken =
      which === 'firewall'
        ? firewallState(p, { agentEnabled: true })
        : fail2banState(p, { agentEnabled: true });
    const other =
      which === 'firewall'
        ? fail2banState(p, { agentEnabled: true })
        : firewallState(p, { agentEnabled: true });
    assert.equal(broken.available, false);
    assert.match(!broken.available ? broken.reason : '', why);
    assert.equal(other.available, true);
  }
  assert.equal(parseHostSnapshot('x'.repeat(5 * 1024 * 1024)).ok, false);
});

test('snapshot state without the agent says how to turn it on', async () => {
  const parsed = parseHostSnapshot(JSON.stringify(snapshot()));
  assert.deepEqual(firewallState(parsed, { agentEnabled: false }), {
    available: false,
    reason: AGENT_OFF_REASON,
  });
  assert.deepEqual(fail2banState(null, { agentEnabled: false }), {
    available: false,
    reason: AGENT_OFF_REASON,
  });
  assert.match(AGENT_OFF_REASON, /svc security-agent on/);

  const { dir, cleanup } = await tempDir('snapfile');
  cleanups.push(cleanup);
  const missing = await readHostSnapshot(dir);
  assert.equal(missing.ok, false);
  assert.equal(firewallState(missing, { agentEnabled: true }).available, false);
  await writeFile(join(dir, 'host-snapshot.json'), Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00]));
  const corrupt = await readHostSnapshot(dir);
  assert.equal(corrupt.ok, false);
  assert.match(!corrupt.ok ? corrupt.reason : '', /not valid JSON/);
  assert.equal(
    (await readHostSnapshot(join(dir, 'host-snapshot.json'))).ok,
    false,
    'a file where the dir should be',
  );
});

test('posture: all good, in the contract order', () => {
  const items = rows(input());
  assert.deepEqual(
    items.map((r) => r.code),
    [
      'firewall',
      'fail2ban',
      'master_key',
      'metrics_token',
      'exposure_mode',
      'base_domain',
      'request_monitoring',
      'host_ports',
    ],
  );
  assert.deepEqual(
    items.map((r) => r.status),
    ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok'],
  );
  for (const r of items) {
    assert.deepEqual(Object.keys(r).slice(0, 5), ['code', 'status', 'title', 'reason', 'fix']);
    assert.ok(r.title && r.reason && r.fix);
  }
});

test('posture rows change as the environment changes', () => {
  assert.deepEqual(status(input({ masterKeySet: false }), 'master_key'), ['error']);
  assert.deepEqual(status(input({ metricsTokenSet: false }), 'metrics_token'), ['warning']);
  assert.deepEqual(status(input({ exposure: 'local' }), 'exposure_mode'), ['warning']);
  assert.deepEqual(status(input({ baseDomain: '' }), 'base_domain'), ['warning']);
  assert.deepEqual(status(input({ baseDomain: null }), 'base_domain'), ['warning']);
  // A base domain says HTTPS only when Caddy runs our config and serves a valid certificate for the control domain.
  const edge = {
    enabled: true,
    synced: true,
    controlDomain: 'svc.example.test',
    controlCertNotAfter: '2099-01-01T00:00:00.000Z',
  };
  assert.deepEqual(status(input({ edge }), 'base_domain'), ['ok']);
  assert.deepEqual(status(input({ edge: { ...edge, controlCertNotAfter: null } }), 'base_domain'), [
    'warning',
  ]);
  const off = rows(input({ edge: { ...edge, enabled: false } })).find((r) => r.code === 'base_domain')!;
  assert.equal(off.status, 'warning');
  assert.match(off.reason, /proxy is turned off/);
  const unsynced = rows(
    input({
      edge: {
        ...edge,
        synced: false,
        error: "Caddy's admin API at http://127.0.0.1:2019 is unreachable (ECONNREFUSED)",
      },
    }),
  ).find((r) => r.code === 'base_domain')!;
  assert.equal(unsynced.status, 'error');
  assert.match(unsynced.reason, /not in sync: Caddy's admin API .* unreachable/);
  assert.notEqual(
    status(input({ edge: undefined }), 'base_domain')[0],
    'ok',
    'without knowledge of the proxy, no claim of HTTPS',
  );
  assert.deepEqual(status(input({ monitorEnabled: false }), 'request_monitoring'), ['warning']);
  const notReading = rows(
    input({
      tailer: { reading: false, path: '/x/access.log', error: 'file not found', lines: 0, lastLineAt: null },
    }),
  );
  assert.equal(notReading[6].status, 'warning');
  assert.match(notReading[6].reason, /not being read \(file not found\)/);
  assert.deepEqual(status(input({ tailer: null }), 'request_monitoring'), ['warning']);

  const ports = rows(
    input({
      hostPorts: [
        {
          app: 'shop',
          service: 'db',
          ports: [{ host_ip: '0.0.0.0', host_port: 5432, container_port: 5432 }],
        },
        { app: 'shop', service: 'cache', ports: [{ host_ip: '127.0.0.1', host_port: 6379 }] },
        { app: 'blog', service: 'web', ports: [8080, '8443'] },
      ],
    }),
  ).filter((r) => r.code === 'host_ports');
  assert.deepEqual(
    ports.map((r) => [r.status, r.app, r.service]),
    [
      ['warning', 'shop', 'db'],
      ['warning', 'blog', 'web'],
    ],
  );
  assert.match(ports[0].reason, /"db" of app "shop" publishes host port 5432->5432/);
  assert.match(ports[1].reason, /8080, 8443/);
});

test('posture: firewall and fail2ban follow the snapshot, agent and opt-out', () => {
  const snap = (s: Partial<HostSnapshot>) => parseHostSnapshot(JSON.stringify(snapshot(s)));
  const fw = (i: PostureInput) => rows(i)[0];
  const f2 = (i: PostureInput) => rows(i)[1];

  assert.equal(
    fw(input({ snapshot: snap({ firewall: { backend: null, installed: false, active: false, rules: [] } }) }))
      .status,
    'error',
  );
  const inactive = fw(
    input({ snapshot: snap({ firewall: { backend: 'ufw', installed: true, active: false, rules: [] } }) }),
  );
  assert.equal(inactive.status, 'error');
  assert.match(inactive.reason, /ufw is installed but inactive/);
  assert.match(inactive.fix, /ufw enable/);
  const stale = input({ snapshot: snap({ generated_at: new Date(NOW - 10 * 60_000).toISOString() }) });
  assert.equal(fw(stale).status, 'warning');
  assert.match(fw(stale).reason, /stale.*10 minutes/);
  assert.equal(f2(stale).status, 'warning');

  assert.equal(
    f2(input({ snapshot: snap({ fail2ban: { installed: false, active: false, jails: [] } }) })).status,
    'warning',
  );
  assert.equal(
    f2(input({ snapshot: snap({ fail2ban: { installed: true, active: false, jails: [] } }) })).status,
    'warning',
  );
  assert.equal(
    f2(input({ snapshot: snap({ fail2ban: { installed: true, active: true, jails: [] } }) })).status,
    'warning',
  );

  const off = rows(input({ agentEnabled: false }));
  for (const r of off.slice(0, 2)) {
    assert.equal(r.status, 'warning');
    assert.match(r.fix, /svc security-agent on/);
  }
  const noSnap = rows(
    input({ snapshot: { ok: false, reason: 'snapshot is not valid JSON (truncated or corrupt)' } }),
  );
  assert.equal(noSnap[0].status, 'warning');
  assert.match(noSnap[0].reason, /not valid JSON/);

  for (const i of [
    input({ optedOut: true }),
    input({ optedOut: true, agentEnabled: false }),
    input({ optedOut: true, snapshot: null }),
  ]) {
    const r = rows(i);
    assert.deepEqual(
      r.slice(0, 2).map((x) => [x.code, x.status, x.reason]),
      [
        ['firewall', 'info', 'disabled by operator'],
        ['fail2ban', 'info', 'disabled by operator'],
      ],
    );
  }
});

test('opt-out marker file round trip', async () => {
  const { dir, cleanup } = await tempDir('optout');
  cleanups.push(cleanup);
  const data = join(dir, 'data');
  assert.equal(readOptOut(data), false);
  writeOptOut(data, true);
  assert.equal(readOptOut(data), true);
  assert.match(await readFile(optOutPath(data), 'utf8'), /opted_out_at/);
  writeOptOut(data, false);
  assert.equal(readOptOut(data), false);
  writeOptOut(data, false);
});

test('host tool output parsers', () => {
  assert.deepEqual(parseUfwStatus('Status: inactive\n'), { active: false, rules: [] });
  assert.equal(parseUfwStatus('ERROR: You need to be root to run this script'), null);
  const ufw = parseUfwStatus(
    [
      'Status: active',
      'Logging: on (low)',
      'Default: deny (incoming), allow (outgoing), disabled (routed)',
      'New profiles: skip',
      '',
      'To                         Action      From',
      '--                         ------      ----',
      '22/tcp                     ALLOW IN    Anywhere',
      '22/tcp (v6)                ALLOW IN    Anywhere (v6)',
      '',
    ].join('\n'),
  );
  assert.deepEqual(ufw, {
    active: true,
    rules: [
      'Default: deny (incoming), allow (outgoing), disabled (routed)',
      '22/tcp  ALLOW IN  Anywhere',
      '22/tcp (v6)  ALLOW IN  Anywhere (v6)',
    ],
  });

  const nft = parseNftRuleset(
    [
      '# Warning: table ip nat is managed by iptables-nft, do not touch!',
      'table ip nat {',
      '\tchain POSTROUTING {',
      '\t\ttype nat hook postrouting priority srcnat; policy accept;',
      '\t\tmasquerade',
      '\t}',
      '}',
      'table ip filter {',
      '\tchain INPUT {',
      '\t\ttype filter hook input priority filter; policy drop;',
      '\t}',
      '}',
      'table inet fw {',
      '\tset allowed {',
      '\t\ttype ipv4_addr',
      '\t\telements = { 192.0.2.1,',
      '\t\t\t     192.0.2.2 }',
      '\t}',
      '\tchain input {',
      '\t\ttype filter hook input priority filter; policy drop;',
      '\t\tct state established,related accept',
      '\t\ttcp dport { 22, 80, 443 } accept',
      '\t}',
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      '\t}',
      '}',
      '',
    ].join('\n'),
  );
  assert.equal(nft.nativeInputFiltering, true);
  assert.equal(nft.nativeTables, 1);
  assert.deepEqual(nft.rules, [
    'inet fw input: policy drop',
    'inet fw input: ct state established,related accept',
    'inet fw input: tcp dport { 22, 80, 443 } accept',
  ]);
  const onlyIpt = parseNftRuleset(
    'table ip filter {\n\tchain INPUT {\n\t\ttype filter hook input priority filter; policy drop;\n\t}\n}\n',
  );
  assert.equal(onlyIpt.nativeInputFiltering, false);
  assert.equal(onlyIpt.anyInputFiltering, true);
  assert.equal(parseNftRuleset('}}} garbage {{{').nativeInputFiltering, false);

  const ipt = parseIptablesSave(
    '*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DOCKER\nCOMMIT\n*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n-A FORWARD -j DOCKER-USER\nCOMMIT\n',
  );
  assert.deepEqual(ipt, { inputFiltering: false, rules: ['-A FORWARD -j DOCKER-USER'] });

  assert.deepEqual(parseFail2banStatus('Status\n|- Number of jail:\t2\n`- Jail list:\tsshd, recidive\n'), [
    'sshd',
    'recidive',
  ]);
  assert.deepEqual(parseFail2banStatus('Status\n|- Number of jail:\t0\n`- Jail list:\t\n'), []);
  assert.equal(parseFail2banStatus('Failed to access socket path'), null);
  assert.deepEqual(
    parseFail2banJail(
      'sshd',
      [
        'Status for the jail: sshd',
        '|- Filter',
        '|  |- Currently failed:\t0',
        '|  |- Total failed:\t5',
        '|  `- File list:\t/var/log/auth.log',
        '`- Actions',
        '   |- Currently banned:\t2',
        '   |- Total banned:\t7',
        '   `- Banned IP list:\t192.0.2.7 2001:db8::1',
        '',
      ].join('\n'),
    ),
    { name: 'sshd', currently_banned: 2, total_banned: 7, banned_ips: ['192.0.2.7', '2001:db8::1'] },
  );
  assert.equal(parseFail2banJail('x', 'nonsense'), null);
});

test('terminal table lists every row and the fixes of the flagged ones', () => {
  const items = rows(
    input({
      masterKeySet: false,
      optedOut: true,
      hostPorts: [{ app: 'shop', service: 'db', ports: [5432] }],
    }),
  );
  const lines = formatPostureTable(items);
  const text = lines.join('\n');
  assert.match(lines[0], /^STATUS\s+CHECK\s+DETAIL$/);
  assert.match(text, /info\s+Firewall\s+disabled by operator/);
  assert.match(text, /ERROR\s+Master key/);
  assert.match(text, /fix: Set SVC_MASTER_KEY/);
  assert.match(text, /WARNING\s+Host ports \(shop\/db\)/);
  assert.ok(
    lines.every((l) => l.length <= 100),
    'wrapped to the width',
  );
  assert.equal(postureSummary(items), '1 error, 1 warning.');
  assert.equal(postureSummary(rows(input())), 'All checks pass.');
});

test('posture in cluster mode: managers that cannot keep a quorum, and nodes that are down', () => {
  const c = (managers: number, managersReady: number, down: string[] = []) =>
    rows(input({ cluster: { managers, managersReady, down } }));
  const one = c(1, 1).find((r) => r.code === 'cluster_managers')!;
  assert.equal(one.status, 'warning');
  assert.match(one.fix, /docker node promote/);
  assert.equal(c(2, 2).find((r) => r.code === 'cluster_managers')!.status, 'warning');
  assert.equal(c(3, 3).find((r) => r.code === 'cluster_managers')!.status, 'ok');
  assert.equal(c(3, 1).find((r) => r.code === 'cluster_managers')!.status, 'error');
  const down = c(3, 3, ['node5']).find((r) => r.code === 'cluster_nodes')!;
  assert.equal(down.status, 'warning');
  assert.match(down.reason, /node5/);
  assert.equal(c(3, 3).find((r) => r.code === 'cluster_nodes')!.status, 'ok');
  assert.ok(!rows(input()).some((r) => r.code.startsWith('cluster_')), 'single host: no cluster rows');
});
