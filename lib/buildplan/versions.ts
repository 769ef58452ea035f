// Version ranges as repositories write them (`>=18`, `^20.1`, `20.x`, `~> 3.2`, `>=3.9,<4`) reduced to
// one release line of a known list, so the image tag is always one we chose, never text from the repo.

/** A version interval [lo, hi) over (major, minor, patch); hi null is unbounded. */
type V = [number, number, number];
interface Interval {
  lo: V;
  hi: V | null;
}

const ALL: Interval = { lo: [0, 0, 0], hi: null };
const cmp = (a: V, b: V) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
const triple = (p: number[]): V => [p[0] ?? 0, p[1] ?? 0, p[2] ?? 0];
/** The first version past parts at index i: bump(3.2.1, 1) = 3.3.0. */
const bump = (p: number[], i: number): V => triple([...p.slice(0, i), (p[i] ?? 0) + 1, 0, 0].slice(0, 3));

function intersect(a: Interval, b: Interval): Interval {
  const lo = cmp(a.lo, b.lo) >= 0 ? a.lo : b.lo;
  const hi = a.hi === null ? b.hi : b.hi === null ? a.hi : cmp(a.hi, b.hi) <= 0 ? a.hi : b.hi;
  return { lo, hi };
}
const nonEmpty = (i: Interval) => i.hi === null || cmp(i.lo, i.hi) < 0;

const TOKEN =
  /^(>=|<=|>|<|===?|!=|\^|~>|~=|~|=)?v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:[-+p][0-9A-Za-z.-]*)?$/;

/** `~` means `~20.1` -> 20.1.x for npm, and "the last given part may grow" for composer, ruby, python. */
export type Tilde = 'npm' | 'pessimistic';

function comparator(token: string, tilde: Tilde): Interval | null {
  if (/^[xX*]$/.test(token)) return ALL;
  const m = TOKEN.exec(token);
  if (!m) return null;
  const parts: number[] = [];
  for (const x of m.slice(2, 5)) {
    if (x === undefined || !/^\d+$/.test(x)) break;
    parts.push(Number(x));
  }
  const op = m[1] ?? '=';
  if (!parts.length) return op === '<' || op === '>' ? { lo: [0, 0, 0], hi: [0, 0, 0] } : ALL;
  const last = parts.length - 1;
  switch (op) {
    case '>=':
      return { lo: triple(parts), hi: null };
    case '>':
      return { lo: bump(parts, last), hi: null };
    case '<':
      return { lo: [0, 0, 0], hi: triple(parts) };
    case '<=':
      return { lo: [0, 0, 0], hi: bump(parts, last) };
    case '!=':
      return ALL;
    case '^': {
      const i = parts.findIndex((x) => x !== 0);
      return { lo: triple(parts), hi: bump(parts, i < 0 ? last : i) };
    }
    case '~':
      if (tilde === 'npm') return { lo: triple(parts), hi: bump(parts, parts.length > 1 ? 1 : 0) };
      return { lo: triple(parts), hi: bump(parts, Math.max(0, last - 1)) };
    case '~>':
    case '~=':
      return { lo: triple(parts), hi: bump(parts, Math.max(0, last - 1)) };
    default:
      return { lo: triple(parts), hi: bump(parts, last) };
  }
}

/** The range as a union of intervals, or null when some part of it is not understood. */
export function parseRange(input: string, tilde: Tilde): Interval[] | null {
  const out: Interval[] = [];
  for (const alt of input.trim().split(/\s*\|\|?\s*/)) {
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(alt);
    const tokens = hyphen
      ? [`>=${hyphen[1]}`, `<=${hyphen[2]}`]
      : alt
          .replace(/(>=|<=|~>|~=|===?|!=|[<>=^~])\s+/g, '$1')
          .split(/[\s,]+/)
          .filter(Boolean);
    let acc: Interval = ALL;
    for (const t of tokens) {
      const c = comparator(t, tilde);
      if (!c) return null;
      acc = intersect(acc, c);
    }
    out.push(acc);
  }
  return out;
}

export interface Reduced {
  version: string;
  warning: string | null;
  /** The default was taken because the input was not understood or nothing known satisfies it. */
  fallback: boolean;
}

/**
 * The known line (`22`, `3.12`) that input selects: the default when it is allowed, else the newest
 * allowed line. Anything but an exact known line is reduced with a warning; nothing understood or
 * nothing allowed gives the default with a warning.
 */
export function reduceVersion(
  input: string,
  known: readonly string[],
  def: string,
  opts: { name: string; source: string; tilde: Tilde },
): Reduced {
  const bare = input.trim().replace(/^v(?=\d)/, '');
  if (known.includes(bare)) return { version: bare, warning: null, fallback: false };
  const range = parseRange(bare, opts.tilde);
  const what = `${opts.name} version "${input.trim()}" (${opts.source})`;
  if (!range)
    return { version: def, warning: `${what} is not understood; using ${opts.name} ${def}`, fallback: true };
  const fits = known.filter((k) => {
    const p = k.split('.').map(Number);
    const line: Interval = { lo: triple(p), hi: bump(p, p.length - 1) };
    return range.some((r) => nonEmpty(intersect(r, line)));
  });
  if (!fits.length)
    return {
      version: def,
      warning: `${what}: no supported line (${known.join(', ')}) satisfies it; using ${opts.name} ${def}`,
      fallback: true,
    };
  const version = fits.includes(def) ? def : fits[fits.length - 1]!;
  return { version, warning: `${what} reduced to the ${opts.name} ${version} image`, fallback: false };
}
