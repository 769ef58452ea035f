// Readers shared by the per-service normaliser: the findings context and the scalar, list and
// mapping shapes Compose accepts interchangeably for one key.
import type { Finding } from './types.js';
import { splitWords } from './words.js';
import type { BindPolicy } from './policy.js';

export type Raw = Record<string, unknown>;

export interface Ctx {
  service: string;
  findings: Finding[];
  policy: BindPolicy;
}

export function err(ctx: Ctx, key: string, message: string) {
  ctx.findings.push({ level: 'error', service: ctx.service, key, message });
}
export function warn(ctx: Ctx, key: string, message: string) {
  ctx.findings.push({ level: 'warning', service: ctx.service, key, message });
}

export function isMap(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function scalar(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

/** Labels, build args, sysctls: list of `K=V` or a mapping. */
export function stringMap(
  ctx: Ctx,
  key: string,
  v: unknown,
  allowNull = false,
): Record<string, string | null> {
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
export function stringList(ctx: Ctx, key: string, v: unknown): string[] {
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

export function commandLike(ctx: Ctx, key: string, v: unknown): string[] | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') {
    const words = splitWords(v);
    if (!words) {
      err(ctx, key, 'unbalanced quotes');
      return undefined;
    }
    return words;
  }
  if (Array.isArray(v)) return stringList(ctx, key, v);
  err(ctx, key, 'expected a string or a list');
  return undefined;
}
