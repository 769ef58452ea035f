// Just enough TOML for detection: the lines of one table, and one quoted string value. Values found
// here only choose between our own options or pass a validator; nothing is copied through unchecked.

/** The lines of the table `[name]` (up to the next header). */
export function tomlTable(text: string, name: string): string[] {
  const out: string[] = [];
  let inside = false;
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$/.exec(line);
    if (header) inside = header[1] === name;
    else if (inside) out.push(line);
  }
  return out;
}

/** `key = "value"` (or single-quoted) among lines; the raw value, or null. */
export function tomlString(lines: string[], key: string): string | null {
  const re = new RegExp(`^\\s*["']?${key.replace(/[.-]/g, '\\$&')}["']?\\s*=\\s*(?:"([^"]*)"|'([^']*)')`);
  for (const l of lines) {
    const m = re.exec(l);
    if (m) return m[1] ?? m[2] ?? null;
  }
  return null;
}
