import type { PostureItem } from './posture.js';

const LABEL: Record<PostureItem['status'], string> = {
  ok: 'ok',
  info: 'info',
  warning: 'WARNING',
  error: 'ERROR',
};

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      out.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out.length ? out : [''];
}

/** The posture checklist as terminal lines: status, check, reason, and the fix for anything not ok. */
export function formatPostureTable(items: readonly PostureItem[], width = 100): string[] {
  const titles = items.map((i) => (i.app ? `${i.title} (${i.app}/${i.service})` : i.title));
  const c1 = Math.max(6, ...items.map((i) => LABEL[i.status].length));
  const c2 = Math.min(36, Math.max(5, ...titles.map((t) => t.length)));
  const rest = Math.max(30, width - c1 - c2 - 4);
  const pad = ' '.repeat(c1 + c2 + 4);
  const lines = [`${'STATUS'.padEnd(c1)}  ${'CHECK'.padEnd(c2)}  DETAIL`];
  items.forEach((item, n) => {
    const reason = wrap(item.reason, rest);
    lines.push(`${LABEL[item.status].padEnd(c1)}  ${titles[n].slice(0, c2).padEnd(c2)}  ${reason[0]}`);
    for (const r of reason.slice(1)) lines.push(pad + r);
    if (item.status === 'warning' || item.status === 'error') {
      for (const [k, f] of wrap(`fix: ${item.fix}`, rest - 5).entries())
        lines.push(pad + (k === 0 ? f : `     ${f}`));
    }
  });
  return lines;
}

export function postureSummary(items: readonly PostureItem[]): string {
  const n = (s: PostureItem['status']) => items.filter((i) => i.status === s).length;
  const errors = n('error');
  const warnings = n('warning');
  if (errors + warnings === 0) return 'All checks pass.';
  return `${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}.`;
}
