// The structured sections of a service: dependencies, healthcheck, restart policy, networks,
// build, env files, and `deploy` with its resource limits.
import type { BuildSpec, DependsCondition, HealthcheckSpec, ServiceSpec } from './types.js';
import { parseBytes, parseDuration } from './units.js';
import { checkRelativePath, falsy } from './policy.js';
import { err, isMap, scalar, stringList, stringMap, warn, type Ctx, type Raw } from './fields.js';

const CONDITIONS = new Set<DependsCondition>([
  'service_started',
  'service_healthy',
  'service_completed_successfully',
]);

export function dependsOn(ctx: Ctx, v: unknown): ServiceSpec['dependsOn'] {
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
          if (!c || !CONDITIONS.has(c)) {
            err(ctx, `depends_on.${name}.condition`, `unknown condition "${String(opts.condition)}"`);
            continue;
          }
          condition = c;
        }
        if (opts.required === false) required = false;
        for (const k of Object.keys(opts))
          if (!['condition', 'required', 'restart'].includes(k))
            warn(ctx, `depends_on.${name}.${k}`, 'unknown key, ignored');
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

export function healthcheck(ctx: Ctx, v: unknown): HealthcheckSpec | undefined {
  if (!isMap(v)) {
    err(ctx, 'healthcheck', 'expected a mapping');
    return undefined;
  }
  for (const k of Object.keys(v))
    if (!['test', 'interval', 'timeout', 'retries', 'start_period', 'start_interval', 'disable'].includes(k))
      warn(ctx, `healthcheck.${k}`, 'unknown key, ignored');
  if (v.disable === true) return { test: ['NONE'] };
  let test: string[] | undefined;
  if (typeof v.test === 'string') test = ['CMD-SHELL', v.test];
  else if (Array.isArray(v.test)) {
    test = stringList(ctx, 'healthcheck.test', v.test);
    if (!['CMD', 'CMD-SHELL', 'NONE'].includes(test[0] ?? '')) {
      err(ctx, 'healthcheck.test', 'a list must start with CMD, CMD-SHELL or NONE');
      return undefined;
    }
    if (test[0] === 'CMD-SHELL' && test.length !== 2) {
      err(ctx, 'healthcheck.test', 'CMD-SHELL takes exactly one command string');
      return undefined;
    }
    if (test[0] !== 'NONE' && test.length < 2) {
      err(ctx, 'healthcheck.test', 'missing command');
      return undefined;
    }
  } else if (v.test !== undefined) {
    err(ctx, 'healthcheck.test', 'expected a string or a list');
    return undefined;
  }
  const spec: HealthcheckSpec = { test: test ?? [] };
  for (const [k, field] of [
    ['interval', 'intervalMs'],
    ['timeout', 'timeoutMs'],
    ['start_period', 'startPeriodMs'],
  ] as const) {
    if (v[k] === undefined) continue;
    const ms = parseDuration(v[k]);
    if (ms === null) err(ctx, `healthcheck.${k}`, `invalid duration "${String(v[k])}"`);
    else spec[field] = ms;
  }
  if (v.retries !== undefined) {
    if (typeof v.retries === 'number' && Number.isInteger(v.retries) && v.retries >= 0)
      spec.retries = v.retries;
    else err(ctx, 'healthcheck.retries', 'expected a non-negative integer');
  }
  return spec;
}

export function restart(ctx: Ctx, v: unknown): ServiceSpec['restart'] {
  const s = scalar(v);
  if (s === 'no' || s === 'false') return { name: 'no' };
  if (s === 'always' || s === 'unless-stopped') return { name: s };
  const m = s ? /^on-failure(?::(\d+))?$/.exec(s) : null;
  if (m) return { name: 'on-failure', maxRetries: m[1] ? Number(m[1]) : 0 };
  err(ctx, 'restart', `unknown restart policy "${String(v)}"`);
  return undefined;
}

export function networks(ctx: Ctx, v: unknown, declared: Set<string>): ServiceSpec['networks'] {
  const out: ServiceSpec['networks'] = {};
  const add = (key: string, name: string, aliases: string[]) => {
    if (!declared.has(name))
      return err(ctx, key, `network "${name}" is not declared in the top-level "networks"`);
    for (const a of aliases)
      if (!/^[a-z0-9]([a-z0-9_.-]{0,61}[a-z0-9])?$/i.test(a)) return err(ctx, key, `invalid alias "${a}"`);
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
      if (opts === null || opts === undefined) {
        add(`networks.${name}`, name, []);
        continue;
      }
      if (!isMap(opts)) {
        err(ctx, `networks.${name}`, 'expected a mapping');
        continue;
      }
      for (const k of Object.keys(opts)) {
        if (k === 'ipv4_address' || k === 'ipv6_address')
          warn(ctx, `networks.${name}.${k}`, 'fixed addresses are not supported, ignored');
        else if (k !== 'aliases') warn(ctx, `networks.${name}.${k}`, 'unknown key, ignored');
      }
      add(
        `networks.${name}`,
        name,
        opts.aliases === undefined ? [] : stringList(ctx, `networks.${name}.aliases`, opts.aliases),
      );
    }
  } else err(ctx, 'networks', 'expected a list or a mapping');
  return out;
}

export function build(ctx: Ctx, v: unknown): BuildSpec | undefined {
  let raw: Raw;
  if (typeof v === 'string') raw = { context: v };
  else if (isMap(v)) raw = v;
  else {
    err(ctx, 'build', 'expected a path or a mapping');
    return undefined;
  }
  for (const k of Object.keys(raw)) {
    if (['context', 'dockerfile', 'args', 'target'].includes(k)) continue;
    if (k === 'network' && scalar(raw.network) === 'host')
      err(ctx, 'build.network', 'building on the host network is refused');
    else if (k === 'privileged') {
      if (!falsy(raw.privileged)) err(ctx, 'build.privileged', 'privileged builds are refused');
    } else if (k === 'dockerfile_inline')
      err(ctx, 'build.dockerfile_inline', 'inline Dockerfiles are not supported');
    else warn(ctx, `build.${k}`, 'unsupported key, ignored');
  }
  const contextRaw = scalar(raw.context) ?? '.';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(contextRaw) || contextRaw.startsWith('git@')) {
    err(
      ctx,
      'build.context',
      'remote build contexts are refused; the context must be a folder of the repository',
    );
    return undefined;
  }
  const context = checkRelativePath(contextRaw);
  if (context === null) {
    err(ctx, 'build.context', `build context "${contextRaw}" must stay inside the repository`);
    return undefined;
  }
  const dfRaw = scalar(raw.dockerfile) ?? 'Dockerfile';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(dfRaw) || dfRaw.startsWith('git@')) {
    err(
      ctx,
      'build.dockerfile',
      'a Dockerfile from a URL is refused; it must be a file of the build context',
    );
    return undefined;
  }
  const dockerfile = checkRelativePath(dfRaw);
  if (dockerfile === null) {
    err(ctx, 'build.dockerfile', `dockerfile "${dfRaw}" must stay inside the build context`);
    return undefined;
  }
  const args: Record<string, string> = {};
  for (const [k, val] of Object.entries(stringMap(ctx, 'build.args', raw.args, true)))
    if (val !== null) args[k] = val;
  const target = raw.target === undefined ? undefined : (scalar(raw.target) ?? undefined);
  return { context, dockerfile, args, target };
}

export function envFiles(ctx: Ctx, v: unknown): ServiceSpec['envFiles'] {
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

export function deploy(ctx: Ctx, v: unknown, spec: ServiceSpec) {
  if (!isMap(v)) return err(ctx, 'deploy', 'expected a mapping');
  for (const [k, val] of Object.entries(v)) {
    if (k === 'replicas') {
      if (val !== 1) warn(ctx, 'deploy.replicas', 'only one replica per service is run; ignored');
    } else if (k === 'resources') {
      if (!isMap(val)) {
        err(ctx, 'deploy.resources', 'expected a mapping');
        continue;
      }
      for (const [rk, rv] of Object.entries(val)) {
        if (rk === 'limits' && isMap(rv)) {
          limits(ctx, 'deploy.resources.limits', rv, spec);
        } else if (rk === 'reservations' && isMap(rv) && rv.devices !== undefined) {
          err(
            ctx,
            'deploy.resources.reservations.devices',
            'device reservations give the container host devices; refused',
          );
        } else warn(ctx, `deploy.resources.${rk}`, 'unsupported, ignored');
      }
    } else if (k === 'restart_policy' && isMap(val)) {
      const cond = scalar(val.condition);
      if (cond === 'none') spec.restart = { name: 'no' };
      else if (cond === 'on-failure')
        spec.restart = {
          name: 'on-failure',
          maxRetries: typeof val.max_attempts === 'number' ? val.max_attempts : 0,
        };
      else if (cond === 'any' || cond === undefined || cond === null) spec.restart = { name: 'always' };
    } else warn(ctx, `deploy.${k}`, 'unsupported, ignored');
  }
}

export function limits(ctx: Ctx, key: string, rv: Raw, spec: ServiceSpec) {
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
