// Secret values out of text: deployment and run logs, and what an error or an audit entry quotes.
export const MASK = '***';

/** Masks every value (longest first, so a value containing another is masked whole). */
export function masker(secrets: Iterable<string>): (s: string) => string {
  const values = [...new Set([...secrets].filter((v) => v.length >= 4))].sort((a, b) => b.length - a.length);
  if (!values.length) return (s) => s;
  return (s) => {
    let out = s;
    for (const v of values) if (out.includes(v)) out = out.split(v).join(MASK);
    return out;
  };
}
