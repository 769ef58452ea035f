// Small pieces every benchmark script uses.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';

/** `--name N` from the command line: a positive integer, else the fallback. */
export function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i === -1) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} needs a positive integer`);
  return v;
}

/** Deterministic generator so runs are comparable. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Writes `lines` lines, `line(n)` for n = 0.. in order, ten thousand a write. */
export function writeLines(path: string, lines: number, line: (n: number) => string): void {
  const fd = openSync(path, 'w');
  let batch: string[] = [];
  for (let n = 0; n < lines; n++) {
    batch.push(line(n));
    if (batch.length === 10_000) {
      writeSync(fd, batch.join('\n') + '\n');
      batch = [];
    }
  }
  if (batch.length) writeSync(fd, batch.join('\n') + '\n');
  closeSync(fd);
}

/**
 * The baseline the log tailers are measured against: read the file in 64 KiB chunks, split
 * lines, JSON.parse each (and use a field, so the parse is not optimised away). The line count.
 */
export function parseJsonLines(path: string): number {
  const fd = openSync(path, 'r');
  const buf = Buffer.allocUnsafe(64 * 1024);
  let carry = '';
  let lines = 0;
  let sink = 0;
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    let pos = 0;
    for (;;) {
      const nl = buf.indexOf(10, pos);
      if (nl === -1 || nl >= n) break;
      const line = carry ? carry + buf.toString('utf8', pos, nl) : buf.toString('utf8', pos, nl);
      carry = '';
      sink += (JSON.parse(line) as { status: number }).status;
      lines++;
      pos = nl + 1;
    }
    if (pos < n) carry += buf.toString('utf8', pos, n);
  }
  closeSync(fd);
  if (sink === -1) console.error('unreachable');
  return lines;
}
