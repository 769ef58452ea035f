// dotenv-style parsing shared by `env_file` and `.env.example`: comments, blank lines,
// `export ` prefix, single quotes (literal), double quotes (\n \t \" \\ escapes, may span lines),
// unquoted values end at ` #`. No variable expansion: values are data.

export interface DotenvEntry {
  key: string;
  value: string;
}

const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export function parseDotenv(text: string): DotenvEntry[] {
  const out: DotenvEntry[] = [];
  const src = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  let i = 0;
  while (i < src.length) {
    let lineEnd = src.indexOf('\n', i);
    if (lineEnd < 0) lineEnd = src.length;
    const line = src.slice(i, lineEnd);
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) {
      i = lineEnd + 1;
      continue;
    }
    const body = trimmed.replace(/^export\s+/, '');
    const eq = body.indexOf('=');
    const key = (eq < 0 ? body : body.slice(0, eq)).trim();
    if (!KEY.test(key)) {
      i = lineEnd + 1;
      continue;
    }
    if (eq < 0) {
      out.push({ key, value: '' });
      i = lineEnd + 1;
      continue;
    }
    // Work on the raw source from the value's start: a double-quoted value may span lines.
    const valueStart = i + line.indexOf(body) + eq + 1;
    let j = valueStart;
    while (j < src.length && (src[j] === ' ' || src[j] === '\t')) j++;
    const q = src[j];
    if (q === '"' || q === "'") {
      let value = '';
      let k = j + 1;
      let closed = false;
      while (k < src.length) {
        const c = src[k];
        if (c === q) {
          closed = true;
          break;
        }
        if (q === '"' && c === '\\' && k + 1 < src.length) {
          const e = src[k + 1];
          value += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : e;
          k += 2;
          continue;
        }
        value += c;
        k++;
      }
      if (closed) {
        out.push({ key, value });
        const after = src.indexOf('\n', k);
        i = after < 0 ? src.length : after + 1;
        continue;
      }
      // Unterminated quote: treat the rest of the line as an unquoted value.
    }
    let value = src.slice(j, lineEnd);
    const hash = value.search(/\s#/);
    if (hash >= 0) value = value.slice(0, hash);
    out.push({ key, value: value.trim() });
    i = lineEnd + 1;
  }
  return out;
}
