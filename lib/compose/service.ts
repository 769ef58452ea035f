// One compose service: raw mapping -> ServiceSpec plus findings. Every key is either handled,
// refused (error), or reported as ignored (warning); nothing is dropped silently.
import type { BuildSpec, DependsCondition, Finding, HealthcheckSpec, MountSpec, PortSpec, ServiceSpec } from './types.js';
import { splitWords } from './words.js';
import { parseBytes, parseDuration } from './units.js';
import { ALLOWED_CAPS, WARNED_CAPS, checkBindSource, checkRelativePath, falsy, normaliseCap, refusedSecurityOpt, truthy, type BindPolicy } from './policy.js';

type Raw = Record<string, unknown>;

interface Ctx {
  service: string;
  findings: Finding[];
  policy: BindPolicy;
}

function err(ctx: Ctx, key: string, message: string) {
  ctx.findings.push({ level: 'error', service: ctx.service, key, message });
}
function warn(ctx: Ctx, key: string, message: string) {
  ctx.findings.push({ level: 'warning', service: ctx.service, key, message });
}

export function isMap(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function scalar(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

/** Labels, build args, sysctls: list of `K=V` or a mapping. */
export function stringMap(ctx: Ctx, key: string, v: unknown, allowNull = false): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  if (v === null || v === undefined) return out;
  if (Array.isArray(v)) {
    v.forEach((item, i) => {
      const s = scalar(item);
      if (s === null) return err(ctx, `${key}[${i}]`, 'expected a "KEY=value" string');
      const eq = s.indexOf('=');
      if (eq < 0) {
        if (allowNull) out[s] = null;
        else err(ctx, `${key}[${i}]`, `"${s}" has no "="`);
      } else out[s.slice(0, eq)] = s.slice(eq + 1);
    });
    return out;
  }
  if (isMap(v)) {
    for (const [k, val] of Object.entries(v)) {
      if (val === null || val === undefined) {
        if (allowNull) out[k] = null;
        else out[k] = '';
        continue;
      }
      const s = scalar(val);
      if (s === null) err(ctx, `${key}.${k}`, 'expected a string, number or boolean');
      else out[k] = s;
    }
    return out;
  }
  err(ctx, key, 'expected a list of "KEY=value" or a mapping');
  return out;
}

function stringList(ctx: Ctx, key: string, v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) {
    const out: string[] = [];
    v.forEach((item, i) => {
      const s = scalar(item);
      if (s === null) err(ctx, `${key}[${i}]`, 'expected a string');
      else out.push(s);
    });
    return out;
  }
  err(ctx, key, 'expected a string or a list of strings');
  return [];
}

function commandLike(ctx: Ctx, key: string, v: unknown): string[] | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') {
    const words = splitWords(v);
    if (!words) { err(ctx, key, 'unbalanced quotes'); return undefined; }
    return words;
  }
  if (Array.isArray(v)) return stringList(ctx, key, v);
  err(ctx, key, 'expected a string or a list');
  return undefined;
}

function port(ctx: Ctx, key: string, n: unknown): number | null {
  const num = typeof n === 'number' ? n : typeof n === 'string' && /^\d+$/.test(n) ? Number(n) : NaN;
  if (!Number.isInteger(num) || num < 1 || num > 65535) {
    err(ctx, key, `invalid port "${String(n)}"`);
    return null;
  }
  return num;
}

const MAX_RANGE = 100;

function portRange(ctx: Ctx, key: string, s: string): number[] | null {
  const m = /^(\d+)(?:-(\d+))?$/.exec(s);
  if (!m) { err(ctx, key, `invalid port "${s}"`); return null; }
  const a = port(ctx, key, m[1]);
  const b = m[2] === undefined ? a : port(ctx, key, m[2]);
  if (a === null || b === null) return null;
  if (b < a || b - a >= MAX_RANGE) { err(ctx, key, `invalid or too large port range "${s}" (at most ${MAX_RANGE})`); return null; }
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}

function protocol(ctx: Ctx, key: string, p: string): PortSpec['protocol'] | null {
  const v = p.toLowerCase();
  if (v === 'tcp' || v === 'udp' || v === 'sctp') return v;
  err(ctx, key, `invalid protocol "${p}"`);
  return null;
}

function ports(ctx: Ctx, v: unknown): PortSpec[] {
  const out: PortSpec[] = [];
  if (!Array.isArray(v)) { err(ctx, 'ports', 'expected a list'); return out; }
  v.forEach((item, i) => {
    const key = `ports[${i}]`;
    if (isMap(item)) {
      for (const k of Object.keys(item)) if (!['target', 'published', 'host_ip', 'protocol', 'mode', 'name', 'app_protocol'].includes(k)) warn(ctx, `${key}.${k}`, 'unknown key, ignored');
      const target = port(ctx, `${key}.target`, item.target);
      if (target === null) return;
      const proto = protocol(ctx, `${key}.protocol`, scalar(item.protocol) ?? 'tcp');
      if (!proto) return;
      let published: number | undefined;
      if (item.published !== undefined && item.published !== null && item.published !== '') {
        const p = port(ctx, `${key}.published`, item.published);
        if (p === null) return;
        published = p;
      }
      const hostIp = scalar(item.host_ip) ?? undefined;
      if (hostIp !== undefined && !isIp(hostIp)) return err(ctx, `${key}.host_ip`, `invalid host IP "${hostIp}"`);
      out.push({ target, published, hostIp, protocol: proto });
      return;
    }
    const s = scalar(item);
    if (s === null) return err(ctx, key, 'expected a string or a mapping');
    let rest = s;
    let proto: PortSpec['protocol'] = 'tcp';
    const slash = rest.lastIndexOf('/');
    if (slash >= 0) {
      const p = protocol(ctx, key, rest.slice(slash + 1));
      if (!p) return;
      proto = p;
      rest = rest.slice(0, slash);
    }
    let hostIp: string | undefined;
    if (rest.startsWith('[')) {
      const close = rest.indexOf(']:');
      if (close < 0) return err(ctx, key, `invalid port mapping "${s}"`);
      hostIp = rest.slice(1, close);
      rest = rest.slice(close + 2);
    }
    const parts = rest.split(':');
    let pub = '';
    let target = '';
    if (parts.length === 1) target = parts[0];
    else if (parts.length === 2) [pub, target] = parts;
    else if (parts.length === 3 && hostIp === undefined) [hostIp, pub, target] = parts;
    else return err(ctx, key, `invalid port mapping "${s}"`);
    if (hostIp !== undefined && !isIp(hostIp)) return err(ctx, key, `invalid host IP "${hostIp}"`);
    const targets = portRange(ctx, key, target);
    if (!targets) return;
    let pubs: (number | undefined)[] = targets.map(() => undefined);
    if (pub !== '') {
      const p = portRange(ctx, key, pub);
      if (!p) return;
      if (p.length === 1 && targets.length > 1) return err(ctx, key, `one host port for a range of container ports in "${s}"`);
      if (p.length !== targets.length && p.length !== 1) return err(ctx, key, `port ranges of different sizes in "${s}"`);
      pubs = p;
    }
    targets.forEach((t, j) => out.push({ target: t, published: pubs[j], hostIp, protocol: proto }));
  });
  return out;
}

function isIp(s: string): boolean {
  return /^(\d{1,3}\.){3}\d{1,3}$/.test(s) || (/^[0-9a-fA-F:]+$/.test(s) && s.includes(':'));
}

function mounts(ctx: Ctx, v: unknown, declared: Set<string>): MountSpec[] {
  const out: MountSpec[] = [];
  if (!Array.isArray(v)) { err(ctx, 'volumes', 'expected a list'); return out; }
  v.forEach((item, i) => {
    const key = `volumes[${i}]`;
    let type: string;
    let source: string | undefined;
    let target: string;
    let readOnly = false;
    let noCopy = false;
    let tmpfsSize: number | undefined;
    if (isMap(item)) {
      for (const k of Object.keys(item)) if (!['type', 'source', 'target', 'read_only', 'volume', 'bind', 'tmpfs', 'consistency'].includes(k)) warn(ctx, `${key}.${k}`, 'unknown key, ignored');
      type = scalar(item.type) ?? 'volume';
      source = scalar(item.source) ?? undefined;
      const t = scalar(item.target);
      if (!t) return err(ctx, `${key}.target`, 'missing target');
      target = t;
      readOnly = truthy(item.read_only);
      if (isMap(item.volume) && item.volume.nocopy === true) noCopy = true;
      if (isMap(item.tmpfs) && item.tmpfs.size !== undefined) {
        const n = parseBytes(item.tmpfs.size);
        if (n === null) return err(ctx, `${key}.tmpfs.size`, 'invalid size');
        tmpfsSize = n;
      }
      if (isMap(item.bind) && item.bind.propagation !== undefined) {
        const p = scalar(item.bind.propagation);
        if (p && /shared|slave/.test(p)) return err(ctx, `${key}.bind.propagation`, `mount propagation "${p}" lets mounts cross between host and container`);
      }
    } else {
      const s = scalar(item);
      if (s === null) return err(ctx, key, 'expected a string or a mapping');
      const parts = s.split(':');
      if (parts.length === 1) {
        type = 'anonymous';
        target = parts[0];
      } else {
        source = parts[0];
        target = parts[1];
        const opts = parts.slice(2).join(':').split(',').filter(Boolean);
        for (const o of opts) {
          if (o === 'ro') readOnly = true;
          else if (o === 'rw' || o === 'z' || o === 'Z' || o === 'cached' || o === 'delegated' || o === 'consistent') { /* no effect here */ }
          else if (o === 'nocopy') noCopy = true;
          else if (/^(r?shared|r?slave)$/.test(o)) return err(ctx, key, `mount propagation "${o}" lets mounts cross between host and container`);
          else if (/^r?private$/.test(o)) { /* default */ }
          else warn(ctx, key, `unknown volume option "${o}", ignored`);
        }
        type = /^[./~]/.test(source) ? 'bind' : 'volume';
      }
    }
    if (!target.startsWith('/')) return err(ctx, key, `container path "${target}" must be absolute`);
    if (type === 'volume' && !source) type = 'anonymous';
    switch (type) {
      case 'anonymous':
        out.push({ type: 'anonymous', target, readOnly });
        return;
      case 'volume':
        if (!declared.has(source!)) return err(ctx, key, `named volume "${source}" is not declared in the top-level "volumes"`);
        out.push({ type: 'volume', source: source!, target, readOnly, noCopy });
        return;
      case 'bind': {
        if (!source) return err(ctx, key, 'bind mount without a source');
        const checked = checkBindSource(source, ctx.policy);
        if (!checked.ok) return err(ctx, key, checked.reason);
        out.push({ type: 'bind', source: checked.source, target, readOnly, relative: checked.relative });
        return;
      }
      case 'tmpfs':
        out.push({ type: 'tmpfs', target, sizeBytes: tmpfsSize });
        return;
      default:
        err(ctx, `${key}.type`, `volume type "${type}" is not supported`);
    }
  });
  return out;
}

const CONDITIONS = new Set<DependsCondition>(['service_started', 'service_healthy', 'service_completed_successfully']);

function dependsOn(ctx: Ctx, v: unknown): ServiceSpec['dependsOn'] {
  const out: ServiceSpec['dependsOn'] = {};
  if (Array.isArray(v)) {
    v.forEach((item, i) => {
      const s = scalar(item);
      if (s === null) err(ctx, `depends_on[${i}]`, 'expected a service name');
      else out[s] = { condition: 'service_started', required: true };
    });
    return out;
  }
  if (isMap(v)) {
    for (const [name, opts] of Object.entries(v)) {
      let condition: DependsCondition = 'service_started';
      let required = true;
      if (isMap(opts)) {
        if (opts.condition !== undefined) {
          const c = scalar(opts.condition) as DependsCondition | null;
          if (!c || !CONDITIONS.has(c)) { err(ctx, `depends_on.${name}.condition`, `unknown condition "${String(opts.condition)}"`); continue; }
          condition = c;
        }
        if (opts.required === false) required = false;
        for (const k of Object.keys(opts)) if (!['condition', 'required', 'restart'].includes(k)) warn(ctx, `depends_on.${name}.${k}`, 'unknown key, ignored');
      } else if (opts !== null && opts !== undefined) {
        err(ctx, `depends_on.${name}`, 'expected a mapping');
        continue;
      }
      out[name] = { condition, required };
    }
    return out;
  }
  err(ctx, 'depends_on', 'expected a list or a mapping');
  return out;
}

function healthcheck(ctx: Ctx, v: unknown): HealthcheckSpec | undefined {
  if (!isMap(v)) { err(ctx, 'healthcheck', 'expected a mapping'); return undefined; }
  for (const k of Object.keys(v)) if (!['test', 'interval', 'timeout', 'retries', 'start_period', 'start_interval', 'disable'].includes(k)) warn(ctx, `healthcheck.${k}`, 'unknown key, ignored');
  if (v.disable === true) return { test: ['NONE'] };
  let test: string[] | undefined;
  if (typeof v.test === 'string') test = ['CMD-SHELL', v.test];
  else if (Array.isArray(v.test)) {
    test = stringList(ctx, 'healthcheck.test', v.test);
    if (!['CMD', 'CMD-SHELL', 'NONE'].includes(test[0] ?? '')) { err(ctx, 'healthcheck.test', 'a list must start with CMD, CMD-SHELL or NONE'); return undefined; }
    if (test[0] === 'CMD-SHELL' && test.length !== 2) { err(ctx, 'healthcheck.test', 'CMD-SHELL takes exactly one command string'); return undefined; }
    if (test[0] !== 'NONE' && test.length < 2) { err(ctx, 'healthcheck.test', 'missing command'); return undefined; }
  } else if (v.test !== undefined) { err(ctx, 'healthcheck.test', 'expected a string or a list'); return undefined; }
  const spec: HealthcheckSpec = { test: test ?? [] };
  for (const [k, field] of [['interval', 'intervalMs'], ['timeout', 'timeoutMs'], ['start_period', 'startPeriodMs']] as const) {
    if (v[k] === undefined) continue;
    const ms = parseDuration(v[k]);
    if (ms === null) err(ctx, `healthcheck.${k}`, `invalid duration "${String(v[k])}"`);
    else spec[field] = ms;
  }
  if (v.retries !== undefined) {
    if (typeof v.retries === 'number' && Number.isInteger(v.retries) && v.retries >= 0) spec.retries = v.retries;
    else err(ctx, 'healthcheck.retries', 'expected a non-negative integer');
  }
  return spec;
}

function restart(ctx: Ctx, v: unknown): ServiceSpec['restart'] {
  const s = scalar(v);
  if (s === 'no' || s === 'false') return { name: 'no' };
  if (s === 'always' || s === 'unless-stopped') return { name: s };
  const m = s ? /^on-failure(?::(\d+))?$/.exec(s) : null;
  if (m) return { name: 'on-failure', maxRetries: m[1] ? Number(m[1]) : 0 };
  err(ctx, 'restart', `unknown restart policy "${String(v)}"`);
  return undefined;
}

function networks(ctx: Ctx, v: unknown, declared: Set<string>): ServiceSpec['networks'] {
  const out: ServiceSpec['networks'] = {};
  const add = (key: string, name: string, aliases: string[]) => {
    if (!declared.has(name)) return err(ctx, key, `network "${name}" is not declared in the top-level "networks"`);
    for (const a of aliases) if (!/^[a-z0-9]([a-z0-9_.-]{0,61}[a-z0-9])?$/i.test(a)) return err(ctx, key, `invalid alias "${a}"`);
    out[name] = { aliases };
  };
  if (Array.isArray(v)) {
    v.forEach((item, i) => {
      const s = scalar(item);
      if (s === null) err(ctx, `networks[${i}]`, 'expected a network name');
      else add(`networks[${i}]`, s, []);
    });
  } else if (isMap(v)) {
    for (const [name, opts] of Object.entries(v)) {
      if (opts === null || opts === undefined) { add(`networks.${name}`, name, []); continue; }
      if (!isMap(opts)) { err(ctx, `networks.${name}`, 'expected a mapping'); continue; }
      for (const k of Object.keys(opts)) {
        if (k === 'ipv4_address' || k === 'ipv6_address') warn(ctx, `networks.${name}.${k}`, 'fixed addresses are not supported, ignored');
        else if (k !== 'aliases') warn(ctx, `networks.${name}.${k}`, 'unknown key, ignored');
      }
      add(`networks.${name}`, name, opts.aliases === undefined ? [] : stringList(ctx, `networks.${name}.aliases`, opts.aliases));
    }
  } else err(ctx, 'networks', 'expected a list or a mapping');
  return out;
}

function build(ctx: Ctx, v: unknown): BuildSpec | undefined {
  let raw: Raw;
  if (typeof v === 'string') raw = { context: v };
  else if (isMap(v)) raw = v;
  else { err(ctx, 'build', 'expected a path or a mapping'); return undefined; }
  for (const k of Object.keys(raw)) {
    if (['context', 'dockerfile', 'args', 'target'].includes(k)) continue;
    if (k === 'network' && scalar(raw.network) === 'host') err(ctx, 'build.network', 'building on the host network is refused');
    else if (k === 'privileged') { if (!falsy(raw.privileged)) err(ctx, 'build.privileged', 'privileged builds are refused'); }
    else if (k === 'dockerfile_inline') err(ctx, 'build.dockerfile_inline', 'inline Dockerfiles are not supported');
    else warn(ctx, `build.${k}`, 'unsupported key, ignored');
  }
  const contextRaw = scalar(raw.context) ?? '.';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(contextRaw) || contextRaw.startsWith('git@')) { err(ctx, 'build.context', 'remote build contexts are refused; the context must be a folder of the repository'); return undefined; }
  const context = checkRelativePath(contextRaw);
  if (context === null) { err(ctx, 'build.context', `build context "${contextRaw}" must stay inside the repository`); return undefined; }
  const dfRaw = scalar(raw.dockerfile) ?? 'Dockerfile';
  const dockerfile = checkRelativePath(dfRaw);
  if (dockerfile === null) { err(ctx, 'build.dockerfile', `dockerfile "${dfRaw}" must stay inside the build context`); return undefined; }
  const args: Record<string, string> = {};
  for (const [k, val] of Object.entries(stringMap(ctx, 'build.args', raw.args, true))) if (val !== null) args[k] = val;
  const target = raw.target === undefined ? undefined : scalar(raw.target) ?? undefined;
  return { context, dockerfile, args, target };
}

function envFiles(ctx: Ctx, v: unknown): ServiceSpec['envFiles'] {
  const items = Array.isArray(v) ? v : [v];
  const out: ServiceSpec['envFiles'] = [];
  items.forEach((item, i) => {
    const key = Array.isArray(v) ? `env_file[${i}]` : 'env_file';
    const p = isMap(item) ? scalar(item.path) : scalar(item);
    if (!p) return err(ctx, key, 'expected a path');
    const rel = checkRelativePath(p);
    if (rel === null) return err(ctx, key, `env file "${p}" must be inside the repository`);
    out.push({ path: rel, required: !(isMap(item) && item.required === false) });
  });
  return out;
}

function deploy(ctx: Ctx, v: unknown, spec: ServiceSpec) {
  if (!isMap(v)) return err(ctx, 'deploy', 'expected a mapping');
  for (const [k, val] of Object.entries(v)) {
    if (k === 'replicas') {
      if (val !== 1) warn(ctx, 'deploy.replicas', 'only one replica per service is run; ignored');
    } else if (k === 'resources') {
      if (!isMap(val)) { err(ctx, 'deploy.resources', 'expected a mapping'); continue; }
      for (const [rk, rv] of Object.entries(val)) {
        if (rk === 'limits' && isMap(rv)) {
          limits(ctx, 'deploy.resources.limits', rv, spec);
        } else if (rk === 'reservations' && isMap(rv) && rv.devices !== undefined) {
          err(ctx, 'deploy.resources.reservations.devices', 'device reservations give the container host devices; refused');
        } else warn(ctx, `deploy.resources.${rk}`, 'unsupported, ignored');
      }
    } else if (k === 'restart_policy' && isMap(val)) {
      const cond = scalar(val.condition);
      if (cond === 'none') spec.restart = { name: 'no' };
      else if (cond === 'on-failure') spec.restart = { name: 'on-failure', maxRetries: typeof val.max_attempts === 'number' ? val.max_attempts : 0 };
      else if (cond === 'any' || cond === undefined || cond === null) spec.restart = { name: 'always' };
    } else warn(ctx, `deploy.${k}`, 'unsupported, ignored');
  }
}

function limits(ctx: Ctx, key: string, rv: Raw, spec: ServiceSpec) {
  for (const [lk, lv] of Object.entries(rv)) {
    if (lk === 'cpus') {
      const n = typeof lv === 'number' ? lv : typeof lv === 'string' ? Number(lv) : NaN;
      if (!Number.isFinite(n) || n <= 0) err(ctx, `${key}.cpus`, `invalid CPU count "${String(lv)}"`);
      else spec.limits = { ...spec.limits, nanoCpus: Math.round(n * 1e9) };
    } else if (lk === 'memory') {
      const b = parseBytes(lv);
      if (b === null || b <= 0) err(ctx, `${key}.memory`, `invalid memory size "${String(lv)}"`);
      else spec.limits = { ...spec.limits, memoryBytes: b };
    } else if (lk === 'pids') {
      warn(ctx, `${key}.pids`, 'unsupported, ignored');
    } else warn(ctx, `${key}.${lk}`, 'unsupported, ignored');
  }
}

const IGNORED = new Set(['container_name', 'platform', 'pull_policy', 'logging', 'profiles', 'domainname', 'mac_address', 'scale', 'annotations', 'attach', 'develop', 'labels_file', 'secrets', 'configs', 'oom_score_adj', 'ulimits', 'dns', 'dns_search', 'dns_opt', 'links', 'storage_opt', 'isolation', 'post_start', 'pre_stop']);

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
  const spec: ServiceSpec = {
    name, environment: {}, envFiles: [], ports: [], expose: [], volumes: [], dependsOn: {}, labels: {},
    networks: {}, capAdd: [], capDrop: [], extraHosts: [], tmpfs: [], sysctls: {}, securityOpt: [],
  };
  for (const [key, v] of Object.entries(raw)) {
    switch (key) {
      case 'image': {
        const s = scalar(v);
        if (!s || !isImageRef(s)) err(ctx, key, `invalid image reference "${String(v)}"`);
        else spec.image = s;
        break;
      }
      case 'build': spec.build = build(ctx, v); break;
      case 'command': spec.command = commandLike(ctx, key, v); break;
      case 'entrypoint': spec.entrypoint = commandLike(ctx, key, v); break;
      case 'environment': {
        spec.environment = stringMap(ctx, key, v, true);
        for (const k of Object.keys(spec.environment)) if (!k || k.includes('=') || k.includes('\0')) err(ctx, `environment.${k}`, 'invalid variable name');
        break;
      }
      case 'env_file': spec.envFiles = envFiles(ctx, v); break;
      case 'ports': spec.ports = ports(ctx, v); break;
      case 'expose':
        for (const [i, e] of (Array.isArray(v) ? v : [v]).entries()) {
          const s = scalar(e);
          const m = s ? /^(\d+)(?:-(\d+))?(?:\/(tcp|udp|sctp))?$/.exec(s) : null;
          if (!m) { err(ctx, `expose[${i}]`, `invalid port "${String(e)}"`); continue; }
          const range = portRange(ctx, `expose[${i}]`, m[2] ? `${m[1]}-${m[2]}` : m[1]);
          for (const p of range ?? []) spec.expose.push(`${p}/${m[3] ?? 'tcp'}`);
        }
        break;
      case 'volumes': spec.volumes = mounts(ctx, v, volumes); break;
      case 'depends_on': spec.dependsOn = dependsOn(ctx, v); break;
      case 'healthcheck': spec.healthcheck = healthcheck(ctx, v); break;
      case 'restart': spec.restart = restart(ctx, v); break;
      case 'labels': {
        const labels = stringMap(ctx, key, v);
        for (const [k, val] of Object.entries(labels)) {
          if (k === 'svc' || k.startsWith('svc.')) err(ctx, `labels.${k}`, 'labels under "svc." are reserved for the control plane');
          else spec.labels[k] = val ?? '';
        }
        break;
      }
      case 'networks': spec.networks = networks(ctx, v, networksDeclared); break;
      case 'network_mode': {
        const s = scalar(v) ?? '';
        if (s === 'none') spec.networkMode = 'none';
        else if (s.startsWith('service:')) {
          const target = s.slice('service:'.length);
          if (!services.has(target)) err(ctx, key, `network_mode refers to undefined service "${target}"`);
          else spec.networkMode = s;
        } else if (s === 'host') err(ctx, key, 'network_mode "host" gives the container the host\'s network stack; refused');
        else if (s.startsWith('container:')) err(ctx, key, 'network_mode "container:" joins a container outside this app; refused');
        else err(ctx, key, `network_mode "${s}" would leave the app's own network; refused`);
        break;
      }
      case 'working_dir': spec.workingDir = scalar(v) ?? undefined; break;
      case 'user': spec.user = scalar(v) ?? undefined; break;
      case 'hostname': spec.hostname = scalar(v) ?? undefined; break;
      case 'deploy': deploy(ctx, v, spec); break;
      case 'mem_limit': limits(ctx, '', { memory: v }, spec); break;
      case 'cpus': limits(ctx, '', { cpus: v }, spec); break;
      case 'cap_add':
        for (const c of stringList(ctx, key, v)) {
          const cap = normaliseCap(c);
          if (!ALLOWED_CAPS.has(cap)) err(ctx, key, `capability ${cap} is not on the allow-list (${[...ALLOWED_CAPS].sort().join(', ')}); it can reach beyond the container; refused`);
          else {
            const why = WARNED_CAPS.get(cap);
            if (why) warn(ctx, key, `capability ${cap} is powerful: ${why}`);
            spec.capAdd.push(cap);
          }
        }
        break;
      case 'cap_drop': spec.capDrop = stringList(ctx, key, v).map(normaliseCap); break;
      case 'extra_hosts':
        spec.extraHosts = Array.isArray(v) ? stringList(ctx, key, v) : Object.entries(stringMap(ctx, key, v)).map(([h, ip]) => `${h}:${ip}`);
        break;
      case 'tmpfs': spec.tmpfs = stringList(ctx, key, v); break;
      case 'stop_signal': spec.stopSignal = scalar(v) ?? undefined; break;
      case 'stop_grace_period': {
        const ms = parseDuration(v);
        if (ms === null) err(ctx, key, `invalid duration "${String(v)}"`);
        else spec.stopGracePeriodMs = ms;
        break;
      }
      case 'init': spec.init = truthy(v); break;
      case 'tty': spec.tty = truthy(v); break;
      case 'stdin_open': spec.stdinOpen = truthy(v); break;
      case 'read_only': spec.readOnly = truthy(v); break;
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
        err(ctx, key, s === 'host' ? `${key} "host" shares the host's namespace; refused` : `${key} "${s}" shares a namespace outside this service; refused`);
        break;
      }
      case 'cgroup_parent': err(ctx, key, 'cgroup_parent places the container outside the engine\'s control; refused'); break;
      case 'devices':
      case 'device_cgroup_rules':
      case 'gpus':
        if (!(Array.isArray(v) && v.length === 0)) err(ctx, key, 'access to host devices is refused');
        break;
      case 'volumes_from': err(ctx, key, 'volumes_from is refused (it can reach other containers\' data)'); break;
      case 'external_links': err(ctx, key, 'external_links reach containers outside this app; refused'); break;
      case 'runtime': err(ctx, key, 'custom container runtimes are refused'); break;
      case 'credential_spec': err(ctx, key, 'credential_spec is refused'); break;
      default:
        if (IGNORED.has(key)) warn(ctx, key, 'not supported by this control plane; ignored');
        else if (key.startsWith('x-')) { /* extension fields are for the author */ }
        else warn(ctx, key, 'unknown key; ignored');
    }
  }
  if (!spec.image && !spec.build) err(ctx, 'image', 'a service needs an image or a build section');
  return spec;
}

/** Docker image reference: [host[:port]/]path[:tag][@digest], lowercase path. */
export function isImageRef(s: string): boolean {
  if (s.length > 512 || s.startsWith('-')) return false;
  return /^(?:[a-zA-Z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/.test(s);
}
