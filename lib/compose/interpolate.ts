// Compose-style variable interpolation over the parsed document. Substituted values are
// never interpolated again, so an app env value containing `$` reaches the container as is.

export interface InterpolationIssue {
  level: 'error' | 'warning';
  variable: string;
  message: string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/**
 * Interpolates one string. Supports `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
 * `${VAR:+alt}`, `${VAR+alt}`, `${VAR:?message}`, `${VAR?message}`; defaults may nest.
 */
export function interpolateString(
  input: string,
  env: Readonly<Record<string, string>>,
  issues: InterpolationIssue[],
): string {
  let out = '';
  let i = 0;
  while (i < input.length) {
    const ch = input[i];
    if (ch !== '$') {
      out += ch;
      i++;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (next === '{') {
      const end = matchingBrace(input, i + 1);
      if (end < 0) {
        issues.push({ level: 'error', variable: '', message: `unterminated "\${" in "${clip(input)}"` });
        return out + input.slice(i);
      }
      out += expandBraced(input.slice(i + 2, end), env, issues);
      i = end + 1;
      continue;
    }
    const m = NAME.exec(input.slice(i + 1));
    if (m) {
      out += lookup(m[0], env, issues);
      i += 1 + m[0].length;
      continue;
    }
    // A lone `$` (before a space, digit, end...) is literal, as in compose.
    out += '$';
    i++;
  }
  return out;
}

function matchingBrace(s: string, open: number): number {
  let depth = 0;
  for (let j = open; j < s.length; j++) {
    if (s[j] === '$' && s[j + 1] === '$') {
      j++;
      continue;
    }
    if (s[j] === '{') depth++;
    else if (s[j] === '}') {
      depth--;
      if (depth === 0) return j;
    }
  }
  return -1;
}

function expandBraced(
  body: string,
  env: Readonly<Record<string, string>>,
  issues: InterpolationIssue[],
): string {
  const m = NAME.exec(body);
  if (!m) {
    issues.push({ level: 'error', variable: body, message: `invalid interpolation "\${${clip(body)}}"` });
    return '';
  }
  const name = m[0];
  const rest = body.slice(name.length);
  if (rest === '') return lookup(name, env, issues);
  const op = rest.startsWith(':') ? rest.slice(0, 2) : rest.slice(0, 1);
  const arg = rest.slice(op.length);
  const has = Object.prototype.hasOwnProperty.call(env, name);
  const value = has ? env[name] : undefined;
  const nonEmpty = value !== undefined && value !== '';
  switch (op) {
    case ':-':
      return nonEmpty ? value! : interpolateString(arg, env, issues);
    case '-':
      return has ? value! : interpolateString(arg, env, issues);
    case ':+':
      return nonEmpty ? interpolateString(arg, env, issues) : '';
    case '+':
      return has ? interpolateString(arg, env, issues) : '';
    case ':?':
    case '?': {
      const ok = op === ':?' ? nonEmpty : has;
      if (ok) return value!;
      const msg = interpolateString(arg, env, issues);
      issues.push({
        level: 'error',
        variable: name,
        message: `required variable ${name} is missing a value${msg ? `: ${msg}` : ''}`,
      });
      return '';
    }
    default:
      issues.push({ level: 'error', variable: name, message: `invalid interpolation "\${${clip(body)}}"` });
      return '';
  }
}

function lookup(name: string, env: Readonly<Record<string, string>>, issues: InterpolationIssue[]): string {
  if (Object.prototype.hasOwnProperty.call(env, name)) return env[name];
  issues.push({
    level: 'warning',
    variable: name,
    message: `variable ${name} is not set; using an empty string`,
  });
  return '';
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/**
 * Interpolates every string value of a parsed document (mapping keys stay as written).
 * `report(path, issue)` receives each problem with the dotted path of the value.
 */
export function interpolateTree(
  node: unknown,
  env: Readonly<Record<string, string>>,
  report: (path: string[], issue: InterpolationIssue) => void,
  path: string[] = [],
): unknown {
  if (typeof node === 'string') {
    const issues: InterpolationIssue[] = [];
    const v = interpolateString(node, env, issues);
    for (const issue of issues) report(path, issue);
    return v;
  }
  if (Array.isArray(node))
    return node.map((item, i) => interpolateTree(item, env, report, [...path, `[${i}]`]));
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = interpolateTree(v, env, report, [...path, k]);
    return out;
  }
  return node;
}
