// One compose service: raw mapping -> ServiceSpec plus findings. Every key is either handled,
// refused (error), or reported as ignored (warning); nothing is dropped silently.
import { emptyService, type Finding, type ServiceSpec } from './types.js';
import { parseBytes, parseDuration } from './units.js';
import {
  ALLOWED_CAPS,
  WARNED_CAPS,
  falsy,
  normaliseCap,
  refusedSecurityOpt,
  truthy,
  type BindPolicy,
} from './policy.js';
import { commandLike, err, isMap, scalar, stringList, stringMap, warn, type Ctx } from './fields.js';
import { portRange, ports } from './ports.js';
import { mounts } from './mounts.js';
import { build, dependsOn, deploy, envFiles, healthcheck, limits, networks, restart } from './sections.js';

export { isMap, stringMap };

const IGNORED = new Set([
  'container_name',
  'platform',
  'pull_policy',
  'logging',
  'profiles',
  'domainname',
  'mac_address',
  'scale',
  'annotations',
  'attach',
  'develop',
  'labels_file',
  'secrets',
  'configs',
  'oom_score_adj',
  'ulimits',
  'dns',
  'dns_search',
  'dns_opt',
  'links',
  'storage_opt',
  'isolation',
  'post_start',
  'pre_stop',
]);

/** What a key's rule sees besides its value: every service, volume and network the file declares. */
interface Scope {
  services: Set<string>;
  volumes: Set<string>;
  networksDeclared: Set<string>;
}

/** One key of a service: reads its value into the spec, or records why not. */
type KeyRule = (ctx: Ctx, key: string, v: unknown, spec: ServiceSpec, scope: Scope) => void;

/** What a key sets and how it is checked. */
const SETTINGS: Record<string, KeyRule> = {
  image: (ctx, key, v, spec) => {
    const s = scalar(v);
    if (!s || !isImageRef(s)) err(ctx, key, `invalid image reference "${String(v)}"`);
    else spec.image = s;
  },
  build: (ctx, _key, v, spec) => {
    spec.build = build(ctx, v);
  },
  command: (ctx, key, v, spec) => {
    spec.command = commandLike(ctx, key, v);
  },
  entrypoint: (ctx, key, v, spec) => {
    spec.entrypoint = commandLike(ctx, key, v);
  },
  environment: (ctx, key, v, spec) => {
    spec.environment = stringMap(ctx, key, v, true);
    for (const k of Object.keys(spec.environment))
      if (!k || k.includes('=') || k.includes('\0')) err(ctx, `environment.${k}`, 'invalid variable name');
  },
  env_file: (ctx, _key, v, spec) => {
    spec.envFiles = envFiles(ctx, v);
  },
  ports: (ctx, _key, v, spec) => {
    spec.ports = ports(ctx, v);
  },
  expose: (ctx, _key, v, spec) => {
    for (const [i, e] of (Array.isArray(v) ? v : [v]).entries()) {
      const s = scalar(e);
      const m = s ? /^(\d+)(?:-(\d+))?(?:\/(tcp|udp|sctp))?$/.exec(s) : null;
      if (!m) {
        err(ctx, `expose[${i}]`, `invalid port "${String(e)}"`);
        continue;
      }
      const range = portRange(ctx, `expose[${i}]`, m[2] ? `${m[1]}-${m[2]}` : m[1]);
      for (const p of range ?? []) spec.expose.push(`${p}/${m[3] ?? 'tcp'}`);
    }
  },
  volumes: (ctx, _key, v, spec, scope) => {
    spec.volumes = mounts(ctx, v, scope.volumes);
  },
  depends_on: (ctx, _key, v, spec) => {
    spec.dependsOn = dependsOn(ctx, v);
  },
  healthcheck: (ctx, _key, v, spec) => {
    spec.healthcheck = healthcheck(ctx, v);
  },
  restart: (ctx, _key, v, spec) => {
    spec.restart = restart(ctx, v);
  },
  labels: (ctx, key, v, spec) => {
    const labels = stringMap(ctx, key, v);
    for (const [k, val] of Object.entries(labels)) {
      if (k === 'svc' || k.startsWith('svc.'))
        err(ctx, `labels.${k}`, 'labels under "svc." are reserved for the control plane');
      else spec.labels[k] = val ?? '';
    }
  },
  networks: (ctx, _key, v, spec, scope) => {
    spec.networks = networks(ctx, v, scope.networksDeclared);
  },
  network_mode: (ctx, key, v, spec, scope) => {
    const s = scalar(v) ?? '';
    if (s === 'none') spec.networkMode = 'none';
    else if (s.startsWith('service:')) {
      const target = s.slice('service:'.length);
      if (!scope.services.has(target)) err(ctx, key, `network_mode refers to undefined service "${target}"`);
      else spec.networkMode = s;
    } else if (s === 'host')
      err(ctx, key, 'network_mode "host" gives the container the host\'s network stack; refused');
    else if (s.startsWith('container:'))
      err(ctx, key, 'network_mode "container:" joins a container outside this app; refused');
    else err(ctx, key, `network_mode "${s}" would leave the app's own network; refused`);
  },
  working_dir: (_ctx, _key, v, spec) => {
    spec.workingDir = scalar(v) ?? undefined;
  },
  user: (_ctx, _key, v, spec) => {
    spec.user = scalar(v) ?? undefined;
  },
  hostname: (_ctx, _key, v, spec) => {
    spec.hostname = scalar(v) ?? undefined;
  },
  deploy: (ctx, _key, v, spec) => deploy(ctx, v, spec),
  mem_limit: (ctx, _key, v, spec) => limits(ctx, '', { memory: v }, spec),
  cpus: (ctx, _key, v, spec) => limits(ctx, '', { cpus: v }, spec),
  cap_add: (ctx, key, v, spec) => {
    for (const c of stringList(ctx, key, v)) {
      const cap = normaliseCap(c);
      if (!ALLOWED_CAPS.has(cap))
        err(
          ctx,
          key,
          `capability ${cap} is not on the allow-list (${[...ALLOWED_CAPS].sort().join(', ')}); it can reach beyond the container; refused`,
        );
      else {
        const why = WARNED_CAPS.get(cap);
        if (why) warn(ctx, key, `capability ${cap} is powerful: ${why}`);
        spec.capAdd.push(cap);
      }
    }
  },
  cap_drop: (ctx, key, v, spec) => {
    spec.capDrop = stringList(ctx, key, v).map(normaliseCap);
  },
  extra_hosts: (ctx, key, v, spec) => {
    spec.extraHosts = Array.isArray(v)
      ? stringList(ctx, key, v)
      : Object.entries(stringMap(ctx, key, v)).map(([h, ip]) => `${h}:${ip}`);
  },
  tmpfs: (ctx, key, v, spec) => {
    spec.tmpfs = stringList(ctx, key, v);
  },
  stop_signal: (_ctx, _key, v, spec) => {
    spec.stopSignal = scalar(v) ?? undefined;
  },
  stop_grace_period: (ctx, key, v, spec) => {
    const ms = parseDuration(v);
    if (ms === null) err(ctx, key, `invalid duration "${String(v)}"`);
    else spec.stopGracePeriodMs = ms;
  },
  init: (_ctx, _key, v, spec) => {
    spec.init = truthy(v);
  },
  tty: (_ctx, _key, v, spec) => {
    spec.tty = truthy(v);
  },
  stdin_open: (_ctx, _key, v, spec) => {
    spec.stdinOpen = truthy(v);
  },
  read_only: (_ctx, _key, v, spec) => {
    spec.readOnly = truthy(v);
  },
  shm_size: (ctx, key, v, spec) => {
    const b = parseBytes(v);
    if (b === null) err(ctx, key, `invalid size "${String(v)}"`);
    else spec.shmSizeBytes = b;
  },
  sysctls: (ctx, key, v, spec) => {
    for (const [k, val] of Object.entries(stringMap(ctx, key, v))) spec.sysctls[k] = val ?? '';
  },
  security_opt: (ctx, key, v, spec) => {
    for (const o of stringList(ctx, key, v)) {
      const reason = refusedSecurityOpt(o);
      if (reason) err(ctx, key, `${reason}; refused`);
      else spec.securityOpt.push(o);
    }
  },
};

/** A namespace key: the service's own namespace is fine, any other (the host's first) is refused. */
const sharedNamespace: KeyRule = (ctx, key, v) => {
  const s = scalar(v) ?? '';
  if (key === 'ipc' && ['private', 'shareable', 'none', ''].includes(s)) return;
  if (key === 'cgroup' && (s === 'private' || s === '')) return;
  if (s === '') return;
  err(
    ctx,
    key,
    s === 'host'
      ? `${key} "host" shares the host's namespace; refused`
      : `${key} "${s}" shares a namespace outside this service; refused`,
  );
};
const noDevices: KeyRule = (ctx, key, v) => {
  if (!(Array.isArray(v) && v.length === 0)) err(ctx, key, 'access to host devices is refused');
};
const refuse =
  (message: string): KeyRule =>
  (ctx, key) =>
    err(ctx, key, message);

/** Refused outright: each of these reaches the host. */
const REFUSED: Record<string, KeyRule> = {
  // Anything but a clear "false" counts: "yes", "on", 1, "TRUE" all mean privileged somewhere.
  privileged: (ctx, key, v) => {
    if (!falsy(v)) err(ctx, key, 'privileged containers have full access to the host; refused');
  },
  pid: sharedNamespace,
  ipc: sharedNamespace,
  uts: sharedNamespace,
  cgroup: sharedNamespace,
  userns_mode: sharedNamespace,
  cgroup_parent: refuse("cgroup_parent places the container outside the engine's control; refused"),
  devices: noDevices,
  device_cgroup_rules: noDevices,
  gpus: noDevices,
  volumes_from: refuse("volumes_from is refused (it can reach other containers' data)"),
  external_links: refuse('external_links reach containers outside this app; refused'),
  runtime: refuse('custom container runtimes are refused'),
  credential_spec: refuse('credential_spec is refused'),
};

const KEYS: Record<string, KeyRule> = { ...SETTINGS, ...REFUSED };

/** `services` holds every service name of the file (for `network_mode: service:x`). */
export function normaliseService(
  name: string,
  raw: unknown,
  services: Set<string>,
  volumes: Set<string>,
  networksDeclared: Set<string>,
  policy: BindPolicy,
  findings: Finding[],
): ServiceSpec | null {
  const ctx: Ctx = { service: name, findings, policy };
  if (!isMap(raw)) {
    err(ctx, '(service)', 'a service must be a mapping');
    return null;
  }
  const spec = emptyService(name);
  const scope: Scope = { services, volumes, networksDeclared };
  for (const [key, v] of Object.entries(raw)) {
    const rule = Object.hasOwn(KEYS, key) ? KEYS[key] : undefined;
    if (rule) rule(ctx, key, v, spec, scope);
    else if (IGNORED.has(key)) warn(ctx, key, 'not supported by this control plane; ignored');
    else if (key.startsWith('x-')) {
      /* extension fields are for the author */
    } else warn(ctx, key, 'unknown key; ignored');
  }
  if (!spec.image && !spec.build) err(ctx, 'image', 'a service needs an image or a build section');
  return spec;
}

/** Docker image reference: [host[:port]/]path[:tag][@digest], lowercase path. */
export function isImageRef(s: string): boolean {
  if (s.length > 512 || s.startsWith('-')) return false;
  return /^(?:[a-zA-Z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/.test(
    s,
  );
}
