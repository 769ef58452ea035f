// A `.env` paste parsed in the browser: `KEY=value`, `export KEY=value`, comments, blank lines,
// single quotes (literal), double quotes (\n \t \" \\ escapes, may span lines), unquoted values
// with a ` #` comment dropped. Keys follow the API's rule so a paste is refused line by line here,
// before anything is sent.
export interface DotenvResult {
  entries: Array<{ key: string; value: string }>;
  errors: Array<{ line: number; message: string }>;
}

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function parseDotenv(text: string): DotenvResult {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const entries = new Map<string, string>();
  const errors: DotenvResult['errors'] = [];
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let line = lines[i]!.replace(/^\uFEFF/, '');
    if (!line.trim() || line.trimStart().startsWith('#')) continue;
    line = line.trimStart().replace(/^export\s+/, '');
    const eq = line.indexOf('=');
    if (eq < 0) {
      errors.push({ line: lineNo, message: 'no "=" on this line' });
      continue;
    }
    const key = line.slice(0, eq).trim();
    if (!KEY.test(key)) {
      errors.push({
        line: lineNo,
        message: `"${key}" is not a valid key (letters, digits and _, not starting with a digit)`,
      });
      continue;
    }
    let rest = line.slice(eq + 1).trimStart();
    let value: string;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) {
        errors.push({ line: lineNo, message: 'unterminated single quote' });
        continue;
      }
      value = rest.slice(1, end);
    } else if (rest.startsWith('"')) {
      let out = '';
      let j = 1;
      let closed = false;
      // A double-quoted value may continue on the next lines until its closing quote.
      for (;;) {
        for (; j < rest.length; j++) {
          const c = rest[j]!;
          if (c === '\\' && j + 1 < rest.length) {
            const n = rest[++j]!;
            out += n === 'n' ? '\n' : n === 't' ? '\t' : n === 'r' ? '\r' : n;
          } else if (c === '"') {
            closed = true;
            break;
          } else out += c;
        }
        if (closed || i + 1 >= lines.length) break;
        out += '\n';
        rest = lines[++i]!;
        j = 0;
      }
      if (!closed) {
        errors.push({ line: lineNo, message: 'unterminated double quote' });
        continue;
      }
      value = out;
    } else {
      const hash = rest.search(/\s#/);
      value = (hash >= 0 ? rest.slice(0, hash) : rest).trim();
    }
    entries.set(key, value);
  }
  return { entries: [...entries].map(([key, value]) => ({ key, value })), errors };
}
