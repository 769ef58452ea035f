// Plain-text output of the client commands: aligned columns, one row a line.
import type { Io } from './parser.js';

export function printTable(io: Io, head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  for (const r of [head, ...rows])
    io.out(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
}
