// `ports` in its short (`[ip:]host:container[/proto]`, ranges) and long (mapping) forms.
import type { PortSpec } from './types.js';
import { err, isMap, scalar, warn, type Ctx } from './fields.js';

function port(ctx: Ctx, key: string, n: unknown): number | null {
  const num = typeof n === 'number' ? n : typeof n === 'string' && /^\d+$/.test(n) ? Number(n) : NaN;
  if (!Number.isInteger(num) || num < 1 || num > 65535) {
    err(ctx, key, `invalid port "${String(n)}"`);
    return null;
  }
  return num;
}

const MAX_RANGE = 100;

export function portRange(ctx: Ctx, key: string, s: string): number[] | null {
  const m = /^(\d+)(?:-(\d+))?$/.exec(s);
  if (!m) {
    err(ctx, key, `invalid port "${s}"`);
    return null;
  }
  const a = port(ctx, key, m[1]);
  const b = m[2] === undefined ? a : port(ctx, key, m[2]);
  if (a === null || b === null) return null;
  if (b < a || b - a >= MAX_RANGE) {
    err(ctx, key, `invalid or too large port range "${s}" (at most ${MAX_RANGE})`);
    return null;
  }
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}

function protocol(ctx: Ctx, key: string, p: string): PortSpec['protocol'] | null {
  const v = p.toLowerCase();
  if (v === 'tcp' || v === 'udp' || v === 'sctp') return v;
  err(ctx, key, `invalid protocol "${p}"`);
  return null;
}

export function ports(ctx: Ctx, v: unknown): PortSpec[] {
  const out: PortSpec[] = [];
  if (!Array.isArray(v)) {
    err(ctx, 'ports', 'expected a list');
    return out;
  }
  v.forEach((item, i) => {
    const key = `ports[${i}]`;
    if (isMap(item)) {
      for (const k of Object.keys(item))
        if (!['target', 'published', 'host_ip', 'protocol', 'mode', 'name', 'app_protocol'].includes(k))
          warn(ctx, `${key}.${k}`, 'unknown key, ignored');
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
      if (hostIp !== undefined && !isIp(hostIp))
        return err(ctx, `${key}.host_ip`, `invalid host IP "${hostIp}"`);
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
      if (p.length === 1 && targets.length > 1)
        return err(ctx, key, `one host port for a range of container ports in "${s}"`);
      if (p.length !== targets.length && p.length !== 1)
        return err(ctx, key, `port ranges of different sizes in "${s}"`);
      pubs = p;
    }
    targets.forEach((t, j) => out.push({ target: t, published: pubs[j], hostIp, protocol: proto }));
  });
  return out;
}

function isIp(s: string): boolean {
  return /^(\d{1,3}\.){3}\d{1,3}$/.test(s) || (/^[0-9a-fA-F:]+$/.test(s) && s.includes(':'));
}
