// `volumes` of a service: anonymous, named (declared at the top level), bind (checked against
// the bind policy) and tmpfs mounts; propagation that crosses into the host is refused.
import type { MountSpec } from './types.js';
import { parseBytes } from './units.js';
import { checkBindSource, truthy } from './policy.js';
import { err, isMap, scalar, warn, type Ctx } from './fields.js';

export function mounts(ctx: Ctx, v: unknown, declared: Set<string>): MountSpec[] {
  const out: MountSpec[] = [];
  if (!Array.isArray(v)) {
    err(ctx, 'volumes', 'expected a list');
    return out;
  }
  v.forEach((item, i) => {
    const key = `volumes[${i}]`;
    let type: string;
    let source: string | undefined;
    let target: string;
    let readOnly = false;
    let noCopy = false;
    let tmpfsSize: number | undefined;
    if (isMap(item)) {
      for (const k of Object.keys(item))
        if (!['type', 'source', 'target', 'read_only', 'volume', 'bind', 'tmpfs', 'consistency'].includes(k))
          warn(ctx, `${key}.${k}`, 'unknown key, ignored');
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
        if (p && /shared|slave/.test(p))
          return err(
            ctx,
            `${key}.bind.propagation`,
            `mount propagation "${p}" lets mounts cross between host and container`,
          );
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
          else if (
            o === 'rw' ||
            o === 'z' ||
            o === 'Z' ||
            o === 'cached' ||
            o === 'delegated' ||
            o === 'consistent'
          ) {
            /* no effect here */
          } else if (o === 'nocopy') noCopy = true;
          else if (/^(r?shared|r?slave)$/.test(o))
            return err(ctx, key, `mount propagation "${o}" lets mounts cross between host and container`);
          else if (/^r?private$/.test(o)) {
            /* default */
          } else warn(ctx, key, `unknown volume option "${o}", ignored`);
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
        if (!declared.has(source!))
          return err(ctx, key, `named volume "${source}" is not declared in the top-level "volumes"`);
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
