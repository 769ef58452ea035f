import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseCompose,
  interpolateString,
  parseDotenv,
  splitWords,
  MAX_COMPOSE_BYTES,
  type Finding,
  type InterpolationIssue,
} from '#lib/compose/index.js';

const errors = (f: Finding[]) => f.filter((x) => x.level === 'error');
const warnings = (f: Finding[]) => f.filter((x) => x.level === 'warning');

test('a full compose file parses into the typed model', () => {
  const r = parseCompose(
    `
services:
  web:
    build:
      context: ./web
      dockerfile: Dockerfile.prod
      args: { VERSION: "\${TAG:-dev}" }
      target: runtime
    command: httpd -f -p "8080"
    entrypoint: ["/bin/sh", "-c"]
    environment:
      - A=1
      - PASS
      - URL=\${DB_URL}
    env_file: .env.web
    ports:
      - "8080"
      - "127.0.0.1:9000:8080"
      - "53:53/udp"
      - "[::1]:7000:7000"
      - target: 80
        published: "8081"
        host_ip: 0.0.0.0
        protocol: tcp
    expose: ["3000", "4000-4001/udp"]
    volumes:
      - data:/var/lib/data:ro
      - ./conf:/etc/conf
      - /scratch
      - type: volume
        source: data
        target: /d2
        read_only: true
      - type: tmpfs
        target: /run/t
        tmpfs: { size: 1m }
    depends_on:
      db:
        condition: service_healthy
    healthcheck:
      test: ["CMD", "wget", "-q", "-O-", "http://localhost:8080/"]
      interval: 1s
      timeout: 1m30s
      retries: 5
      start_period: 500ms
    restart: on-failure:3
    labels: ["team=core", "tier=web"]
    networks:
      default:
      back:
        aliases: [www]
    working_dir: /srv
    user: "1000:1000"
    deploy:
      resources:
        limits: { cpus: "0.5", memory: 256M }
  db:
    image: svc-test/busybox:latest
    environment: { X: "a=b", Y: 2, Z: null }
    healthcheck:
      test: wget -q -O- http://localhost/ || exit 1
    depends_on: []
volumes:
  data: {}
networks:
  back: { internal: true }
`,
    { env: { TAG: '1.2', DB_URL: 'postgres://u:p@db/x?a=$b' } },
  );
  assert.deepEqual(errors(r.findings), []);
  assert.equal(r.ok, true);
  const web = r.model!.services.web;
  assert.deepEqual(web.build, {
    context: 'web',
    dockerfile: 'Dockerfile.prod',
    args: { VERSION: '1.2' },
    target: 'runtime',
  });
  assert.deepEqual(web.command, ['httpd', '-f', '-p', '8080']);
  assert.deepEqual(web.entrypoint, ['/bin/sh', '-c']);
  assert.deepEqual(web.environment, { A: '1', PASS: null, URL: 'postgres://u:p@db/x?a=$b' });
  assert.deepEqual(web.envFiles, [{ path: '.env.web', required: true }]);
  assert.deepEqual(web.ports, [
    { target: 8080, published: undefined, hostIp: undefined, protocol: 'tcp' },
    { target: 8080, published: 9000, hostIp: '127.0.0.1', protocol: 'tcp' },
    { target: 53, published: 53, hostIp: undefined, protocol: 'udp' },
    { target: 7000, published: 7000, hostIp: '::1', protocol: 'tcp' },
    { target: 80, published: 8081, hostIp: '0.0.0.0', protocol: 'tcp' },
  ]);
  assert.deepEqual(web.expose, ['3000/tcp', '4000/udp', '4001/udp']);
  assert.deepEqual(web.volumes, [
    { type: 'volume', source: 'data', target: '/var/lib/data', readOnly: true, noCopy: false },
    { type: 'bind', source: 'conf', target: '/etc/conf', readOnly: false, relative: true },
    { type: 'anonymous', target: '/scratch', readOnly: false },
    { type: 'volume', source: 'data', target: '/d2', readOnly: true, noCopy: false },
    { type: 'tmpfs', target: '/run/t', sizeBytes: 1024 * 1024 },
  ]);
  assert.deepEqual(web.dependsOn, { db: { condition: 'service_healthy', required: true } });
  assert.deepEqual(web.healthcheck, {
    test: ['CMD', 'wget', '-q', '-O-', 'http://localhost:8080/'],
    intervalMs: 1000,
    timeoutMs: 90_000,
    retries: 5,
    startPeriodMs: 500,
  });
  assert.deepEqual(web.restart, { name: 'on-failure', maxRetries: 3 });
  assert.deepEqual(web.labels, { team: 'core', tier: 'web' });
  assert.deepEqual(web.networks, { default: { aliases: [] }, back: { aliases: ['www'] } });
  assert.equal(web.workingDir, '/srv');
  assert.equal(web.user, '1000:1000');
  assert.deepEqual(web.limits, { nanoCpus: 5e8, memoryBytes: 256 * 1024 * 1024 });
  const db = r.model!.services.db;
  assert.deepEqual(db.environment, { X: 'a=b', Y: '2', Z: null });
  assert.deepEqual(db.healthcheck?.test, ['CMD-SHELL', 'wget -q -O- http://localhost/ || exit 1']);
  assert.deepEqual(r.model!.networks.back, { name: 'back', internal: true, labels: {} });
  assert.ok(r.model!.networks.default);
});

test('interpolation: defaults, escapes, unset variables, required ones', () => {
  const env = { A: 'x', EMPTY: '', DOLLAR: '$HOME ${X}' };
  const iss: InterpolationIssue[] = [];
  assert.equal(
    interpolateString('${A}-$A-${A:-d}-${EMPTY:-d}-${EMPTY-d}-${NOPE-d}-$$A-$$-${NOPE:-${A}}', env, iss),
    'x-x-x-d--d-$A-$-x',
  );
  assert.equal(
    interpolateString('${DOLLAR}', env, iss),
    '$HOME ${X}',
    'substituted values are not interpolated again',
  );
  assert.equal(interpolateString('cost: 5$ or $ 3', env, iss), 'cost: 5$ or $ 3');
  assert.equal(iss.length, 0);
  assert.equal(interpolateString('${A:+set}${NOPE:+set}', env, iss), 'set');
  interpolateString('$NOPE', env, iss);
  assert.equal(iss[0].level, 'warning');
  const req: typeof iss = [];
  interpolateString('${NOPE:?must be set}', env, req);
  assert.equal(req[0].level, 'error');
  assert.match(req[0].message, /must be set/);

  const r = parseCompose(
    'services:\n  web:\n    image: "${IMG:?image required}"\n    environment:\n      K: $$literal\n',
    { env: {} },
  );
  assert.equal(r.ok, false);
  assert.ok(
    errors(r.findings).some(
      (f) => f.service === 'web' && f.key === 'image' && /image required/.test(f.message),
    ),
  );
  assert.equal(r.model!.services.web.environment.K, '$literal');
});

test('unknown keys are reported as warnings, not dropped silently', () => {
  const r = parseCompose(
    'version: "3"\nfoo: 1\nservices:\n  web:\n    image: a/b:1\n    frobnicate: true\n    container_name: x\n    x-mine: 1\n',
  );
  assert.equal(r.ok, true);
  const w = warnings(r.findings).map((f) => `${f.service ?? ''}:${f.key}`);
  assert.deepEqual(w.sort(), [':foo', ':version', 'web:container_name', 'web:frobnicate']);
});

test('service names are validated', () => {
  for (const bad of ['Web', '-web', 'a.b', 'x'.repeat(64), 'we b']) {
    const r = parseCompose(`services:\n  "${bad}":\n    image: a\n`);
    assert.equal(r.ok, false, bad);
    assert.equal(errors(r.findings)[0].key, '(name)');
  }
  assert.equal(parseCompose('services:\n  web_1-a:\n    image: a\n').ok, true);
});

// Each construct that reaches the host, with the key the finding must name.
const ESCAPES: [string, string, string][] = [
  ['privileged: true', 'privileged', 'privileged'],
  ['network_mode: host', 'network_mode', 'host'],
  ['network_mode: "container:other"', 'network_mode', 'container'],
  ['network_mode: bridge', 'network_mode', 'bridge'],
  ['network_mode: "service:ghost"', 'network_mode', 'ghost'],
  ['pid: host', 'pid', 'host'],
  ['pid: "container:x"', 'pid', 'namespace'],
  ['ipc: host', 'ipc', 'host'],
  ['uts: host', 'uts', 'host'],
  ['userns_mode: host', 'userns_mode', 'host'],
  ['cgroup: host', 'cgroup', 'host'],
  ['cgroup_parent: /x', 'cgroup_parent', 'cgroup'],
  ['cap_add: [SYS_ADMIN]', 'cap_add', 'SYS_ADMIN'],
  ['cap_add: [ALL]', 'cap_add', 'ALL'],
  ['cap_add: [cap_sys_module]', 'cap_add', 'SYS_MODULE'],
  ['cap_add: [SYS_PTRACE]', 'cap_add', 'SYS_PTRACE'],
  ['cap_add: [DAC_READ_SEARCH]', 'cap_add', 'DAC_READ_SEARCH'],
  ['devices: ["/dev/sda:/dev/sda"]', 'devices', 'devices'],
  ['device_cgroup_rules: ["c 1:3 mr"]', 'device_cgroup_rules', 'devices'],
  ['security_opt: ["apparmor=unconfined"]', 'security_opt', 'unconfined'],
  ['security_opt: ["seccomp:unconfined"]', 'security_opt', 'unconfined'],
  ['security_opt: ["label=disable"]', 'security_opt', 'disable'],
  ['security_opt: ["seccomp=/etc/profile.json"]', 'security_opt', 'profile'],
  ['volumes: ["/var/run/docker.sock:/var/run/docker.sock"]', 'volumes[0]', 'Docker socket'],
  ['volumes: ["/run:/host-run"]', 'volumes[0]', 'Docker socket'],
  ['volumes: ["/:/host"]', 'volumes[0]', 'Docker socket'],
  ['volumes: [{type: bind, source: /var/run/docker.sock, target: /s}]', 'volumes[0]', 'Docker socket'],
  ['volumes: ["/etc:/host-etc:ro"]', 'volumes[0]', 'outside the allowed roots'],
  ['volumes: ["../../etc:/x"]', 'volumes[0]', 'escapes'],
  ['volumes: ["./a/../../b:/x"]', 'volumes[0]', 'escapes'],
  ['volumes: ["~/.ssh:/x"]', 'volumes[0]', 'home'],
  ['volumes: ["/srv/data/../../etc:/x"]', 'volumes[0]', 'outside'],
  [
    'volumes: [{type: bind, source: ./x, target: /x, bind: {propagation: rshared}}]',
    'volumes[0].bind.propagation',
    'propagation',
  ],
  ['volumes_from: [other]', 'volumes_from', 'volumes_from'],
  ['external_links: [foo]', 'external_links', 'external_links'],
  ['runtime: runc-host', 'runtime', 'runtime'],
  ['gpus: all', 'gpus', 'devices'],
  ['build: { context: ., network: host }', 'build.network', 'host'],
  ['build: "https://example.com/repo.git"', 'build.context', 'remote'],
  ['build: ../outside', 'build.context', 'inside'],
  ['env_file: /etc/shadow', 'env_file', 'inside'],
  ['labels: { "svc.app": other }', 'labels.svc.app', 'reserved'],
  [
    'deploy: { resources: { reservations: { devices: [{capabilities: [gpu]}] } } }',
    'deploy.resources.reservations.devices',
    'device',
  ],
  // YAML's other spellings of true: the compose CLI reads them as true, so does the policy.
  ['privileged: "yes"', 'privileged', 'privileged'],
  ['privileged: "true"', 'privileged', 'privileged'],
  ['privileged: "TRUE"', 'privileged', 'privileged'],
  ['privileged: "on"', 'privileged', 'privileged'],
  ['privileged: "1"', 'privileged', 'privileged'],
  ['privileged: 1', 'privileged', 'privileged'],
  ['privileged: "y"', 'privileged', 'privileged'],
  ['build: { context: ., privileged: "yes" }', 'build.privileged', 'privileged'],
  ['build: { context: ., privileged: on }', 'build.privileged', 'privileged'],
  // security_opt entries that switch confinement off or change the SELinux type.
  ['security_opt: ["label=type:spc_t"]', 'security_opt', 'spc_t'],
  ['security_opt: ["label:type:unconfined_t"]', 'security_opt', 'unconfined'],
  ['security_opt: ["label:disable"]', 'security_opt', 'disable'],
  ['security_opt: ["label=user:system_u"]', 'security_opt', 'selinux'],
  ['security_opt: ["label=role:system_r"]', 'security_opt', 'selinux'],
  ['security_opt: ["systempaths=unconfined"]', 'security_opt', 'unconfined'],
  ['security_opt: ["seccomp=unconfined"]', 'security_opt', 'unconfined'],
  ['security_opt: [" Seccomp = Unconfined "]', 'security_opt', 'unconfined'],
  ['security_opt: ["apparmor:unconfined"]', 'security_opt', 'unconfined'],
  ['security_opt: ["apparmor=docker-custom"]', 'security_opt', 'profile'],
  ['security_opt: ["writable-cgroups=true"]', 'security_opt', 'unknown'],
  // cap_add is an allow-list: what the old deny-list let through is refused now.
  ['cap_add: [SYS_TIME]', 'cap_add', 'allow-list'],
  ['cap_add: [WAKE_ALARM]', 'cap_add', 'allow-list'],
  ['cap_add: [SYS_PACCT]', 'cap_add', 'allow-list'],
  ['cap_add: [LINUX_IMMUTABLE]', 'cap_add', 'allow-list'],
  ['cap_add: [CHECKPOINT_RESTORE]', 'cap_add', 'allow-list'],
  ['cap_add: [AUDIT_CONTROL]', 'cap_add', 'allow-list'],
  ['cap_add: [SYS_TTY_CONFIG]', 'cap_add', 'allow-list'],
  ['cap_add: [NEW_CAP_OF_2030]', 'cap_add', 'allow-list'],
];

for (const [yaml, key, words] of ESCAPES) {
  test(`refused: ${yaml}`, () => {
    const r = parseCompose(`services:\n  web:\n    image: svc-test/busybox:latest\n    ${yaml}\n`, {
      allowedBindRoots: ['/srv/data'],
    });
    assert.equal(r.ok, false);
    const e = errors(r.findings);
    assert.ok(
      e.some(
        (f) => f.service === 'web' && f.key === key && f.message.toLowerCase().includes(words.toLowerCase()),
      ),
      JSON.stringify(e),
    );
  });
}

test('top-level volumes and networks that reach outside the app are refused', () => {
  const r = parseCompose(
    `services:\n  web:\n    image: a\nvolumes:\n  ext: { external: true }\n  hostdir: { driver_opts: { type: none, o: bind, device: /etc } }\n  nfs: { driver: nfs }\nnetworks:\n  hostnet: { driver: host }\n  other: { external: true, name: svc-control }\n`,
  );
  assert.deepEqual(
    errors(r.findings)
      .map((f) => f.key)
      .sort(),
    [
      'networks.hostnet.driver',
      'networks.other.external',
      'volumes.ext.external',
      'volumes.hostdir.driver_opts',
      'volumes.nfs.driver',
    ],
  );
});

test('allowed: binds under an allowed root, relative binds, harmless capabilities, service: network mode', () => {
  const r = parseCompose(
    `services:
  web:
    image: a
    volumes: ["/srv/data/web:/data", "./static:/static:ro"]
    cap_add: [NET_BIND_SERVICE, NET_ADMIN]
    cap_drop: [ALL]
    security_opt: ["no-new-privileges:true"]
    privileged: false
    ipc: private
  side:
    image: a
    network_mode: "service:web"
`,
    { allowedBindRoots: ['/srv/data'] },
  );
  assert.deepEqual(errors(r.findings), []);
  assert.ok(warnings(r.findings).some((f) => f.key === 'cap_add' && /NET_ADMIN/.test(f.message)));
  assert.deepEqual(r.model!.services.web.volumes[0], {
    type: 'bind',
    source: '/srv/data/web',
    target: '/data',
    readOnly: false,
    relative: false,
  });
});

test("allowed: Docker's default capabilities and the few harmless ones; warned where powerful", () => {
  const caps = [
    'CHOWN',
    'DAC_OVERRIDE',
    'FOWNER',
    'FSETID',
    'KILL',
    'SETGID',
    'SETUID',
    'SETPCAP',
    'NET_BIND_SERVICE',
    'NET_RAW',
    'SYS_CHROOT',
    'MKNOD',
    'AUDIT_WRITE',
    'SETFCAP',
    'cap_net_admin',
    'SYS_NICE',
    'SYS_RESOURCE',
    'IPC_LOCK',
    'NET_BROADCAST',
  ];
  const r = parseCompose(
    `services:\n  web:\n    image: a\n    cap_add: [${caps.join(', ')}]\n    security_opt: ["no-new-privileges:true", "no-new-privileges", "label=level:s0:c100,c200"]\n    privileged: "no"\n`,
  );
  assert.deepEqual(errors(r.findings), []);
  assert.deepEqual(
    warnings(r.findings)
      .filter((f) => f.key === 'cap_add')
      .map((f) => /capability (\w+)/.exec(f.message)![1])
      .sort(),
    ['NET_ADMIN', 'SYS_NICE', 'SYS_RESOURCE'],
  );
  assert.equal(r.model!.services.web.capAdd.length, caps.length);
  for (const off of ['false', '"false"', '"no"', '"off"', '0', '"0"', 'null']) {
    assert.deepEqual(
      errors(
        parseCompose(
          `services:\n  web:\n    image: a\n    privileged: ${off}\n    build: { context: ., privileged: ${off} }\n`,
        ).findings,
      ),
      [],
      off,
    );
  }
});

test("the harmless switches read YAML's spellings of true too", () => {
  const r = parseCompose(
    'services:\n  web:\n    image: a\n    read_only: "yes"\n    init: "on"\n    tty: "true"\n    stdin_open: 1\n    volumes: [{type: bind, source: ./c, target: /c, read_only: "yes"}]\n',
  );
  assert.deepEqual(errors(r.findings), []);
  const web = r.model!.services.web;
  assert.deepEqual(
    [web.readOnly, web.init, web.tty, web.stdinOpen, (web.volumes[0] as { readOnly: boolean }).readOnly],
    [true, true, true, true, true],
  );
  const off = parseCompose('services:\n  web:\n    image: a\n    read_only: "no"\n    init: false\n').model!
    .services.web;
  assert.deepEqual([off.readOnly, off.init], [false, false]);
});

test('bad input: not YAML, not a mapping, duplicate keys, multiple documents', () => {
  for (const text of [
    'services: [unclosed',
    'just a string',
    '- a\n- b',
    'services:\n  a: {image: x}\n  a: {image: y}\n',
    'a: 1\n---\nb: 2\n',
    '\t- bad: indent',
  ]) {
    const r = parseCompose(text);
    assert.equal(r.ok, false, text);
    assert.equal(r.model, null, text);
    assert.equal(errors(r.findings)[0].key, '(file)');
  }
});

test('bad input: over 1 MiB is refused before parsing', () => {
  const text = `services:\n  web:\n    image: a\n# ${'x'.repeat(MAX_COMPOSE_BYTES)}\n`;
  const r = parseCompose(text);
  assert.equal(r.ok, false);
  assert.match(errors(r.findings)[0].message, /larger than/);
});

test('bad input: billion laughs is refused', () => {
  let text = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
  for (let i = 1; i < 10; i++)
    text += `a${i}: &a${i} [${Array(9)
      .fill(`*a${i - 1}`)
      .join(',')}]\n`;
  text += 'services:\n  web:\n    image: a\n    labels:\n      x: *a9\n';
  const started = process.hrtime.bigint();
  const r = parseCompose(text);
  assert.equal(r.ok, false);
  assert.match(errors(r.findings)[0].message, /alias/i);
  assert.ok(process.hrtime.bigint() - started < 5_000_000_000n, 'refused without expanding');
});

test('merge keys within the alias budget still work', () => {
  const r = parseCompose(
    'x-base: &base\n  image: a\n  restart: always\nservices:\n  a: { <<: *base }\n  b: { <<: *base, image: b }\n',
  );
  assert.deepEqual(errors(r.findings), []);
  assert.equal(r.model!.services.b.image, 'b');
  assert.deepEqual(r.model!.services.a.restart, { name: 'always' });
});

test('bad input: undefined depends_on and cycles name the services', () => {
  let r = parseCompose('services:\n  web:\n    image: a\n    depends_on: [db]\n');
  assert.deepEqual(
    errors(r.findings).map((f) => [f.service, f.key]),
    [['web', 'depends_on']],
  );
  assert.match(errors(r.findings)[0].message, /undefined service "db"/);
  r = parseCompose(
    'services:\n  a: {image: x, depends_on: [b]}\n  b: {image: x, depends_on: {c: {condition: service_healthy}}}\n  c: {image: x, depends_on: [a]}\n',
  );
  const cyc = errors(r.findings).find((f) => /cycle/.test(f.message));
  assert.ok(cyc);
  assert.match(cyc.message, /a -> b -> c -> a/);
  r = parseCompose('services:\n  a: {image: x, depends_on: {b: {condition: whenever}}}\n  b: {image: x}\n');
  assert.equal(errors(r.findings)[0].key, 'depends_on.b.condition');
});

test('other invalid values name their key', () => {
  const cases: [string, string][] = [
    ['ports: ["99999:80"]', 'ports[0]'],
    ['ports: ["1-1000:1-1000"]', 'ports[0]'],
    ['ports: ["80/icmp"]', 'ports[0]'],
    ['volumes: ["nope:/x"]', 'volumes[0]'],
    ['volumes: ["data:relative"]', 'volumes[0]'],
    ['healthcheck: { test: ["WHAT", "x"] }', 'healthcheck.test'],
    ['healthcheck: { test: "true", interval: soon }', 'healthcheck.interval'],
    ['restart: sometimes', 'restart'],
    ['command: "echo \'unbalanced"', 'command'],
    ['networks: [ghost]', 'networks[0]'],
    ['deploy: { resources: { limits: { memory: lots } } }', 'deploy.resources.limits.memory'],
  ];
  for (const [yaml, key] of cases) {
    const r = parseCompose(`services:\n  web:\n    image: a\n    ${yaml}\n`);
    assert.ok(
      errors(r.findings).some((f) => f.service === 'web' && f.key === key),
      `${yaml}: ${JSON.stringify(r.findings)}`,
    );
  }
  const upper = parseCompose('services:\n  web:\n    image: "UPPER/Case"\n');
  assert.equal(errors(upper.findings)[0].key, 'image');
  const none = parseCompose('services:\n  web:\n    restart: always\n');
  assert.equal(errors(none.findings)[0].key, 'image');
});

test('dotenv parsing: comments, quotes, export, multi-line', () => {
  const entries = parseDotenv(
    [
      '# comment',
      '',
      'A=1',
      'export B = two words # trailing comment',
      "C='single $NOT #kept'",
      'D="line1\\nline2 \\"q\\""',
      'E="multi',
      'line"',
      'F=',
      'G=a=b=c',
      'bad key=1',
      'H=#not-a-comment',
    ].join('\n'),
  );
  assert.deepEqual(entries, [
    { key: 'A', value: '1' },
    { key: 'B', value: 'two words' },
    { key: 'C', value: 'single $NOT #kept' },
    { key: 'D', value: 'line1\nline2 "q"' },
    { key: 'E', value: 'multi\nline' },
    { key: 'F', value: '' },
    { key: 'G', value: 'a=b=c' },
    { key: 'H', value: '#not-a-comment' },
  ]);
});

test('command strings split like a shell, without running one', () => {
  assert.deepEqual(splitWords(`sh -c 'echo $HOME; ls' "a b" c\\ d`), [
    'sh',
    '-c',
    'echo $HOME; ls',
    'a b',
    'c d',
  ]);
  assert.equal(splitWords('"open'), null);
});
