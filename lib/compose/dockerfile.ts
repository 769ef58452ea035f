// A Dockerfile read the way the builder reads it (moby/buildkit's parser): parser directives, the
// escape character and line continuations, comments, heredocs, flags, JSON and shell forms, and
// the word expansion ($VAR, ${VAR:-x}, quotes) the builder applies to ADD and COPY sources.
// It exists so a policy sees every instruction before the engine runs any; it builds nothing.

export interface Flag {
  name: string;
  value: string | null;
}
export interface Heredoc {
  name: string;
  /** Line of the first body line, 1-based. */
  line: number;
  body: string;
}
export interface Instruction {
  /** Line the instruction starts on, 1-based. */
  line: number;
  /** Upper case. */
  keyword: string;
  flags: Flag[];
  /** What follows the keyword and flags, continuation lines joined. */
  rest: string;
  /** The strings of the JSON form, or null for the shell form. */
  json: string[] | null;
  heredocs: Heredoc[];
  /** ONBUILD's own instruction. */
  sub?: Instruction;
}
export interface Directives {
  escape: '\\' | '`';
  syntax: string | null;
}
export interface ParsedDockerfile {
  directives: Directives;
  instructions: Instruction[];
  errors: { line: number; message: string }[];
}
export interface ParseOptions {
  /** Read with this escape character whatever the file's directive says. */
  escape?: '\\' | '`';
  /** Read heredoc bodies as heredocs (default); false reads every line as the builders without heredocs do. */
  heredocs?: boolean;
}

const DIRECTIVE = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/;
const HEREDOC_KEYWORDS = new Set(['ADD', 'COPY', 'RUN']);

export function parseDockerfile(text: string, opts: ParseOptions = {}): ParsedDockerfile {
  const lines = text
    .replace(/^\uFEFF/, '')
    .split('\n')
    .map((l) => l.replace(/\r+$/, ''));
  const errors: ParsedDockerfile['errors'] = [];
  const directives: Directives = { escape: '\\', syntax: null };
  // Directives count only at the very top: the first line that is not one ends them.
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const m = DIRECTIVE.exec(lines[i]!);
    const key = m?.[1]!.toLowerCase();
    if (!m || !key || !['escape', 'syntax', 'check'].includes(key)) break;
    if (seen.has(key)) errors.push({ line: i + 1, message: `only one ${key} parser directive can be used` });
    seen.add(key);
    if (key === 'escape') {
      if (m[2] === '`' || m[2] === '\\') directives.escape = m[2];
      else errors.push({ line: i + 1, message: `invalid escape character "${m[2]}" (only \\ and \` are)` });
    } else if (key === 'syntax') directives.syntax = m[2]!;
  }
  const esc = opts.escape ?? directives.escape;
  const continuation = new RegExp(`^(.*?)${esc === '\\' ? '\\\\' : '`'}[ \\t]*$`, 's');
  const trimContinuation = (l: string): [string, boolean] => {
    const m = continuation.exec(l);
    return m ? [m[1]!, false] : [l, true];
  };
  const isComment = (l: string) => /^\s*#/.test(l);
  const instructions: Instruction[] = [];
  let n = 0;
  while (n < lines.length) {
    const start = n + 1;
    const first = lines[n++]!;
    if (isComment(first)) continue;
    let [line, end] = trimContinuation(first.replace(/^\s+/, ''));
    if (end && line === '') continue;
    // Inside a continuation, comment lines and empty lines are dropped, as the builder does.
    while (!end && n < lines.length) {
      const next = lines[n++]!;
      if (isComment(next) || next.trim() === '') continue;
      const [part, e] = trimContinuation(next);
      line += part;
      end = e;
    }
    const inst = parseInstruction(line, start);
    if (!inst) continue;
    instructions.push(inst);
    const holder = inst.keyword === 'ONBUILD' ? inst.sub : inst;
    if (opts.heredocs === false || !holder || !HEREDOC_KEYWORDS.has(holder.keyword)) continue;
    for (const h of heredocNames(line)) {
      const body: string[] = [];
      const bodyLine = n + 1;
      let terminated = false;
      while (n < lines.length) {
        const raw = lines[n++]!;
        if ((h.chomp ? raw.replace(/^\t+/, '') : raw) === h.name) {
          terminated = true;
          break;
        }
        body.push(raw);
      }
      if (!terminated) errors.push({ line: start, message: `unterminated heredoc <<${h.name}` });
      holder.heredocs.push({ name: h.name, line: bodyLine, body: body.join('\n') });
    }
  }
  return { directives, instructions, errors };
}

function parseInstruction(line: string, at: number): Instruction | null {
  const m = /^(\S+)[\t\v\f\r ]*(.*)$/s.exec(line.trim());
  if (!m) return null;
  const keyword = m[1]!.toUpperCase();
  const { rest, flags } = extractFlags(m[2]!);
  const inst: Instruction = { line: at, keyword, flags, rest, json: parseJsonForm(rest), heredocs: [] };
  if (keyword === 'ONBUILD') inst.sub = parseInstruction(rest, at) ?? undefined;
  return inst;
}

function parseJsonForm(rest: string): string[] | null {
  const t = rest.trim();
  if (!t.startsWith('[') || !t.endsWith(']')) return null;
  try {
    const v: unknown = JSON.parse(t);
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
  } catch {
    return null;
  }
}

/** The leading `--name[=value]` words (quotes and backslashes read as the builder's flag scanner does). */
function extractFlags(args: string): { rest: string; flags: Flag[] } {
  const words: string[] = [];
  let pos = 0;
  for (;;) {
    while (pos < args.length && /\s/.test(args[pos]!)) pos++;
    if (!args.startsWith('--', pos)) break;
    let word = '';
    let quote = '';
    let quoted = false;
    for (; pos < args.length; pos++) {
      const ch = args[pos]!;
      if (!quote && /\s/.test(ch)) break;
      if (!quote && (ch === '"' || ch === "'")) {
        quote = ch;
        quoted = true;
      } else if (quote && ch === quote) quote = '';
      else if (ch === '\\') {
        if (pos + 1 < args.length) word += args[++pos];
      } else word += ch;
    }
    if (word === '--') break;
    if (word || quoted) words.push(word);
  }
  const flags = words.map((w) => {
    const eq = w.indexOf('=');
    return eq < 0 ? { name: w.slice(2), value: null } : { name: w.slice(2, eq), value: w.slice(eq + 1) };
  });
  return { rest: args.slice(pos).replace(/^\s+/, ''), flags };
}

/** Heredoc markers among the words of a line: `<<EOF`, `<<-EOF`, `<<"EOF"`, `2<<EOF`. */
function heredocNames(line: string): { name: string; chomp: boolean }[] {
  const out: { name: string; chomp: boolean }[] = [];
  for (const word of splitWords(line)) {
    const m = /^(\d*)<<(-?)([^<]*)$/s.exec(word);
    if (!m || !m[3]) continue;
    const name = m[3].replace(/["']/g, '');
    if (name) out.push({ name, chomp: m[2] === '-' });
  }
  return out;
}

/** Splits on unquoted whitespace, keeping quotes and escapes in the words. */
export function splitWords(s: string, esc = '\\'): string[] {
  const words: string[] = [];
  let word = '';
  let quote = '';
  let any = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (!quote && /\s/.test(ch)) {
      if (any) words.push(word);
      word = '';
      any = false;
      continue;
    }
    any = true;
    word += ch;
    if (ch === esc && quote !== "'" && i + 1 < s.length) word += s[++i];
    else if (!quote && (ch === '"' || ch === "'")) quote = ch;
    else if (ch === quote) quote = '';
  }
  if (any) words.push(word);
  return words;
}

/** A variable whose value this Dockerfile cannot fix (the base image's environment may set it). */
export const UNKNOWN = Symbol('unknown');
/** A variable's value; undefined when it is not set. */
export type Lookup = (name: string) => string | undefined | typeof UNKNOWN;
export type Expansion = { ok: true; value: string } | { ok: false; unknown: string[]; error?: string };

/**
 * Expands one word as the builder does for ADD and COPY: `$NAME`, `${NAME}`, `${NAME:-word}`,
 * `${NAME:+word}`, `${NAME-word}`, `${NAME+word}`, quotes removed, escapes applied. Any variable the
 * lookup cannot fix, or a form this does not model, makes the result unknown rather than a guess.
 */
export function expandWord(word: string, lookup: Lookup, esc = '\\'): Expansion {
  let i = 0;
  const unknown = new Set<string>();
  let error: string | undefined;
  const nameChar = /[\p{L}\p{N}_]/u;

  const readName = (): string => {
    if (i < word.length && /[0-9]/.test(word[i]!)) {
      let d = '';
      while (i < word.length && /[0-9]/.test(word[i]!)) d += word[i++];
      return d;
    }
    if (i < word.length && '@*#?-$!0'.includes(word[i]!)) return word[i++]!;
    let name = '';
    while (i < word.length && nameChar.test(word[i]!)) name += word[i++];
    return name;
  };
  // null: unknown, undefined: not set.
  const value = (name: string): string | undefined | null => {
    const v = lookup(name);
    if (v === UNKNOWN) {
      unknown.add(name);
      return null;
    }
    return v;
  };
  const dollar = (): string => {
    i++;
    if (word[i] !== '{') {
      const name = readName();
      return name ? (value(name) ?? '') : '$';
    }
    i++;
    const name = readName();
    if (!name) {
      error ??= 'bad substitution';
      return '';
    }
    const op = word[i++];
    if (op === '}') return value(name) ?? '';
    const colon = op === ':';
    const mod = colon ? word[i++] : op;
    if (mod !== '-' && mod !== '+') {
      // Pattern forms (${X#p}, ${X%p}, ${X/a/b}) and ${X:?msg}: not modelled, so not trusted.
      error ??= `unsupported substitution \${${name}${op}...}`;
      unknown.add(name);
      return '';
    }
    const alt = until('}');
    const v = value(name);
    if (v === null) return '';
    const set = colon ? !!v : v !== undefined;
    return mod === '-' ? (set ? (v ?? '') : alt) : set ? alt : '';
  };
  const until = (stop: string | null): string => {
    let out = '';
    while (i < word.length) {
      const ch = word[i]!;
      if (stop !== null && ch === stop) {
        i++;
        return out;
      }
      if (ch === esc) {
        i++;
        if (i < word.length) out += word[i++];
      } else if (ch === "'") {
        const j = word.indexOf("'", i + 1);
        if (j < 0) {
          error ??= 'unterminated single quote';
          return out;
        }
        out += word.slice(i + 1, j);
        i = j + 1;
      } else if (ch === '"') {
        i++;
        for (;;) {
          if (i >= word.length) {
            error ??= 'unterminated double quote';
            return out;
          }
          const c = word[i]!;
          if (c === '"') {
            i++;
            break;
          }
          if (c === esc && i + 1 < word.length && ['"', '$', esc].includes(word[i + 1]!)) {
            out += word[i + 1];
            i += 2;
          } else if (c === '$') out += dollar();
          else {
            out += c;
            i++;
          }
        }
      } else if (ch === '$') out += dollar();
      else {
        out += ch;
        i++;
      }
    }
    if (stop !== null) error ??= `missing '${stop}'`;
    return out;
  };
  const out = until(null);
  if (error || unknown.size) return { ok: false, unknown: [...unknown], ...(error ? { error } : {}) };
  return { ok: true, value: out };
}
