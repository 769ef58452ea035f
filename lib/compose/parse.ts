// Compose text -> {model, findings}. Bounded before parsing (size) and while parsing
// (alias expansion), interpolated from the app's env, then normalised and checked.
import type * as Yaml from 'yaml';
import { lazyRequire } from '../util/lazy.js';
import { interpolateTree } from './interpolate.js';
import { normaliseService, isMap, stringMap } from './service.js';
import { checkDependencies } from './graph.js';
import { DEFAULT_SOCKET_PATHS } from './policy.js';
import type { ComposeModel, ComposeResult, Finding, NetworkSpec, VolumeSpec } from './types.js';

const yaml = lazyRequire<typeof Yaml>('yaml');

export const MAX_COMPOSE_BYTES = 1024 * 1024;
export const MAX_SERVICES = 100;
/** Enough for `<<: *defaults` in every service, far too few for exponential expansion. */
export const MAX_ALIAS_COUNT = 200;
export const SERVICE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const RESOURCE_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

export interface ParseOptions {
  /** The app's env: the only source of `${VAR}` values. */
  env?: Readonly<Record<string, string>>;
  /** Absolute host directories under which bind mounts are allowed. Default: none. */
  allowedBindRoots?: readonly string[];
  /** Docker socket paths never to mount (default /var/run/docker.sock and /run/docker.sock). */
  dockerSocketPaths?: readonly string[];
}

const TOP_LEVEL = new Set(['services', 'volumes', 'networks', 'version', 'name']);

export function parseCompose(text: string, opts: ParseOptions = {}): ComposeResult {
  const findings: Finding[] = [];
  const done = (model: ComposeModel | null): ComposeResult => ({
    model,
    findings,
    ok: !findings.some((f) => f.level === 'error'),
  });
  const parsed = readDocument(text, findings);
  if (!parsed) return done(null);
  const raw = interpolateTree(parsed, opts.env ?? {}, (path, issue) => {
    const service = path[0] === 'services' ? path[1] : undefined;
    const key = (service ? path.slice(2) : path).join('.').replace(/\.\[/g, '[');
    findings.push({ level: issue.level, service, key: key || '(file)', message: issue.message });
  });
  const doc = raw as Record<string, unknown>;

  for (const key of Object.keys(doc)) {
    if (!TOP_LEVEL.has(key) && !key.startsWith('x-')) {
      const what = key === 'secrets' || key === 'configs' ? 'not supported' : 'unknown top-level key';
      findings.push({ level: 'warning', key, message: `${what}; ignored` });
    }
  }
  if (doc.version !== undefined)
    findings.push({ level: 'warning', key: 'version', message: '"version" is obsolete; ignored' });

  const volumes = topLevel(doc.volumes, 'volumes', findings);
  const networks = topLevel(doc.networks, 'networks', findings);
  if (!('default' in networks)) networks.default = { name: 'default', internal: false, labels: {} };

  if (!isMap(doc.services) || Object.keys(doc.services).length === 0) {
    findings.push({ level: 'error', key: 'services', message: 'no services defined' });
    return done({ services: {}, volumes, networks });
  }
  if (Object.keys(doc.services).length > MAX_SERVICES) {
    findings.push({ level: 'error', key: 'services', message: `more than ${MAX_SERVICES} services` });
    return done(null);
  }
  const services = normaliseServices(doc.services, { volumes, networks }, opts, findings);
  findings.push(...checkDependencies(services));
  return done({ services, volumes, networks });
}

/** The file as a YAML mapping (bounded in size and alias expansion), or null with an error finding. */
function readDocument(text: string, findings: Finding[]): Record<string, unknown> | null {
  if (Buffer.byteLength(text, 'utf8') > MAX_COMPOSE_BYTES) {
    findings.push({
      level: 'error',
      key: '(file)',
      message: `compose file is larger than ${MAX_COMPOSE_BYTES} bytes`,
    });
    return null;
  }
  let raw: unknown;
  try {
    const doc = yaml().parseDocument(text, {
      merge: true,
      uniqueKeys: true,
      prettyErrors: false,
      strict: true,
      schema: 'core',
    });
    if (doc.errors.length) {
      findings.push({
        level: 'error',
        key: '(file)',
        message: `not valid YAML: ${oneLine(doc.errors[0].message)}`,
      });
      return null;
    }
    raw = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    findings.push({
      level: 'error',
      key: '(file)',
      message: /alias/i.test(msg)
        ? 'YAML aliases expand too much (possible "billion laughs" document); refused'
        : `not valid YAML: ${oneLine(msg)}`,
    });
    return null;
  }
  if (!isMap(raw)) {
    findings.push({ level: 'error', key: '(file)', message: 'a compose file must be a YAML mapping' });
    return null;
  }
  return raw;
}

/** Each service by name; an invalid name is an error finding and no service. */
function normaliseServices(
  raw: Record<string, unknown>,
  declared: Pick<ComposeModel, 'volumes' | 'networks'>,
  opts: ParseOptions,
  findings: Finding[],
): ComposeModel['services'] {
  const names = Object.keys(raw);
  const policy = {
    allowedBindRoots: [...(opts.allowedBindRoots ?? [])],
    dockerSocketPaths: [...(opts.dockerSocketPaths ?? DEFAULT_SOCKET_PATHS)],
  };
  const services: ComposeModel['services'] = {};
  const nameSet = new Set(names);
  for (const name of names) {
    if (!SERVICE_NAME.test(name)) {
      findings.push({
        level: 'error',
        service: name,
        key: '(name)',
        message: `invalid service name (must match ${SERVICE_NAME.source})`,
      });
      continue;
    }
    const spec = normaliseService(
      name,
      raw[name],
      nameSet,
      new Set(Object.keys(declared.volumes)),
      new Set(Object.keys(declared.networks)),
      policy,
      findings,
    );
    if (spec) services[name] = spec;
  }
  return services;
}

function topLevel<T extends 'volumes' | 'networks'>(
  v: unknown,
  kind: T,
  findings: Finding[],
): Record<string, T extends 'volumes' ? VolumeSpec : NetworkSpec> {
  const out: Record<string, VolumeSpec & NetworkSpec> = {};
  if (v === undefined || v === null) return out;
  if (!isMap(v)) {
    findings.push({ level: 'error', key: kind, message: 'expected a mapping' });
    return out;
  }
  for (const [name, def] of Object.entries(v)) {
    const key = `${kind}.${name}`;
    if (!RESOURCE_NAME.test(name)) {
      findings.push({
        level: 'error',
        key,
        message: `invalid ${kind === 'volumes' ? 'volume' : 'network'} name`,
      });
      continue;
    }
    const spec = { name, internal: false, labels: {} as Record<string, string> };
    if (def !== null && def !== undefined && !isMap(def)) {
      findings.push({ level: 'error', key, message: 'expected a mapping' });
      continue;
    }
    let refused = false;
    for (const [k, val] of Object.entries(def ?? {})) {
      if (k === 'external' && val) {
        findings.push({
          level: 'error',
          key: `${key}.external`,
          message: `external ${kind} live outside this app; refused`,
        });
        refused = true;
      } else if (k === 'driver') {
        const ok = kind === 'volumes' ? val === 'local' : val === 'bridge';
        if (!ok) {
          findings.push({
            level: 'error',
            key: `${key}.driver`,
            message: `driver "${String(val)}" is not allowed (only ${kind === 'volumes' ? 'local' : 'bridge'})`,
          });
          refused = true;
        }
      } else if (k === 'driver_opts' && kind === 'volumes') {
        // local driver options (type=none,o=bind,device=/...) turn a named volume into a host bind.
        findings.push({
          level: 'error',
          key: `${key}.driver_opts`,
          message: 'volume driver options can bind host paths; refused',
        });
        refused = true;
      } else if (k === 'internal' && kind === 'networks') spec.internal = val === true;
      else if (k === 'labels') {
        const labels = stringMap(
          { service: '', findings, policy: { allowedBindRoots: [], dockerSocketPaths: [] } },
          `${key}.labels`,
          val,
        );
        for (const [lk, lv] of Object.entries(labels)) {
          if (lk.startsWith('svc.'))
            findings.push({
              level: 'error',
              key: `${key}.labels.${lk}`,
              message: 'labels under "svc." are reserved',
            });
          else spec.labels[lk] = lv ?? '';
        }
      } else if (k === 'name')
        findings.push({
          level: 'warning',
          key: `${key}.name`,
          message: 'custom names are not supported (names are derived from the app); ignored',
        });
      else findings.push({ level: 'warning', key: `${key}.${k}`, message: 'unsupported; ignored' });
    }
    if (!refused) out[name] = spec;
  }
  return out as Record<string, T extends 'volumes' ? VolumeSpec : NetworkSpec>;
}

function oneLine(s: string): string {
  const line = s.split('\n')[0];
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
