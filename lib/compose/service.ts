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
  for (const [key, v] of Object.entries(raw)) {
    switch (key) {
      case 'image': {
        const s = scalar(v);
        if (!s || !isImageRef(s)) err(ctx, key, `invalid image reference "${String(v)}"`);
        else spec.image = s;
        break;
      }
      case 'build':
        spec.build = build(ctx, v);
        break;
      case 'command':
        spec.command = commandLike(ctx, key, v);
        break;
      case 'entrypoint':
        spec.entrypoint = commandLike(ctx, key, v);
        break;
      case 'environment': {
        spec.environment = stringMap(ctx, key, v, true);
        for (const k of Object.keys(spec.environment))
          if (!k || k.includes('=') || k.includes('\0'))
            err(ctx, `environment.${k}`, 'invalid variable name');
        break;
      }
      case 'env_file':
        spec.envFiles = envFiles(ctx, v);
        break;
      case 'ports':
        spec.ports = ports(ctx, v);
        break;
      case 'expose':
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
        break;
      case 'volumes':
        spec.volumes = mounts(ctx, v, volumes);
        break;
      case 'depends_on':
        spec.dependsOn = dependsOn(ctx, v);
        break;
      case 'healthcheck':
        spec.healthcheck = healthcheck(ctx, v);
        break;
      case 'restart':
        spec.restart = restart(ctx, v);
        break;
      case 'labels': {
        const labels = stringMap(ctx, key, v);
        for (const [k, val] of Object.entries(labels)) {
          if (k === 'svc' || k.startsWith('svc.'))
            err(ctx, `labels.${k}`, 'labels under "svc." are reserved for the control plane');
          else spec.labels[k] = val ?? '';
        }
        break;
      }
      case 'networks':
        spec.networks = networks(ctx, v, networksDeclared);
        break;
      case 'network_mode': {
        const s = scalar(v) ?? '';
        if (s === 'none') spec.networkMode = 'none';
        else if (s.startsWith('service:')) {
          const target = s.slice('service:'.length);
          if (!services.has(target)) err(ctx, key, `network_mode refers to undefined service "${target}"`);
          else spec.networkMode = s;
        } else if (s === 'host')
          err(ctx, key, 'network_mode "host" gives the container the host\'s network stack; refused');
        else if (s.startsWith('container:'))
          err(ctx, key, 'network_mode "container:" joins a container outside this app; refused');
        else err(ctx, key, `network_mode "${s}" would leave the app's own network; refused`);
        break;
      }
      case 'working_dir':
        spec.workingDir = scalar(v) ?? undefined;
        break;
      case 'user':
        spec.user = scalar(v) ?? undefined;
        break;
      case 'hostname':
        spec.hostname = scalar(v) ?? undefined;
        break;
      case 'deploy':
        deploy(ctx, v, spec);
        break;
      case 'mem_limit':
        limits(ctx, '', { memory: v }, spec);
        break;
      case 'cpus':
        limits(ctx, '', { cpus: v }, spec);
        break;
      case 'cap_add':
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
        break;
      case 'cap_drop':
        spec.capDrop = stringList(ctx, key, v).map(normaliseCap);
        break;
      case 'extra_hosts':
        spec.extraHosts = Array.isArray(v)
          ? stringList(ctx, key, v)
          : Object.entries(stringMap(ctx, key, v)).map(([h, ip]) => `${h}:${ip}`);
        break;
      case 'tmpfs':
        spec.tmpfs = stringList(ctx, key, v);
        break;
      case 'stop_signal':
        spec.stopSignal = scalar(v) ?? undefined;
        break;
      case 'stop_grace_period': {
        const ms = parseDuration(v);
        if (ms === null) err(ctx, key, `invalid duration "${String(v)}"`);
        else spec.stopGracePeriodMs = ms;
        break;
      }
      case 'init':
        spec.init = truthy(v);
        break;
      case 'tty':
        spec.tty = truthy(v);
        break;
      case 'stdin_open':
        spec.stdinOpen = truthy(v);
        break;
      case 'read_only':
        spec.readOnly = truthy(v);
        break;
      case 'shm_size': {
        const b = parseBytes(v);
        if (b === null) err(ctx, key, `invalid size "${String(v)}"`);
        else spec.shmSizeBytes = b;
        break;
      }
      case 'sysctls':
        for (const [k, val] of Object.entries(stringMap(ctx, key, v))) spec.sysctls[k] = val ?? '';
        break;
      case 'security_opt':
        for (const o of stringList(ctx, key, v)) {
          const reason = refusedSecurityOpt(o);
          if (reason) err(ctx, key, `${reason}; refused`);
          else spec.securityOpt.push(o);
        }
        break;
      // Refused outright: each of these reaches the host.
      // Anything but a clear "false" counts: "yes", "on", 1, "TRUE" all mean privileged somewhere.
      case 'privileged':
        if (!falsy(v)) err(ctx, key, 'privileged containers have full access to the host; refused');
        break;
      case 'pid':
      case 'ipc':
      case 'uts':
      case 'cgroup':
      case 'userns_mode': {
        const s = scalar(v) ?? '';
        if (key === 'ipc' && ['private', 'shareable', 'none', ''].includes(s)) break;
        if (key === 'cgroup' && (s === 'private' || s === '')) break;
        if (s === '') break;
        err(
          ctx,
          key,
          s === 'host'
            ? `${key} "host" shares the host's namespace; refused`
            : `${key} "${s}" shares a namespace outside this service; refused`,
        );
        break;
      }
      case 'cgroup_parent':
        err(ctx, key, "cgroup_parent places the container outside the engine's control; refused");
        break;
      case 'devices':
      case 'device_cgroup_rules':
      case 'gpus':
        if (!(Array.isArray(v) && v.length === 0)) err(ctx, key, 'access to host devices is refused');
        break;
      case 'volumes_from':
        err(ctx, key, "volumes_from is refused (it can reach other containers' data)");
        break;
      case 'external_links':
        err(ctx, key, 'external_links reach containers outside this app; refused');
        break;
      case 'runtime':
        err(ctx, key, 'custom container runtimes are refused');
        break;
      case 'credential_spec':
        err(ctx, key, 'credential_spec is refused');
        break;
      default:
        if (IGNORED.has(key)) warn(ctx, key, 'not supported by this control plane; ignored');
        else if (key.startsWith('x-')) {
          /* extension fields are for the author */
        } else warn(ctx, key, 'unknown key; ignored');
    }
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
