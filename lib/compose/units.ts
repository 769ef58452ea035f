// Compose's duration and byte-size notations.

const DURATION_PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
const DURATION_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** "1m30s", "500ms", "10s" -> milliseconds; a bare number is seconds. null when invalid. */
export function parseDuration(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) && v >= 0 ? v * 1000 : null;
  if (typeof v !== 'string') return null;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000;
  if (!/^((\d+(\.\d+)?)(ns|us|µs|ms|s|m|h))+$/.test(s)) return null;
  let total = 0;
  for (const m of s.matchAll(DURATION_PART)) total += Number(m[1]) * DURATION_MS[m[2]];
  return total;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
};

/** "512m", "1g", "100MB", 1048576 -> bytes. null when invalid. */
export function parseBytes(v: unknown): number | null {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : null;
  if (typeof v !== 'string') return null;
  const m = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(v.trim());
  if (!m) return null;
  const unit = SIZE_UNITS[m[2].toLowerCase()];
  if (unit === undefined) return null;
  return Math.floor(Number(m[1]) * unit);
}
