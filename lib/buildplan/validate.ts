// Every value read from the repository (or typed by the operator) that reaches a generated Dockerfile
// passes one of these kinds first. The reasons name what was wrong, so a refused deploy says why.
import { PlanError } from './types.js';

const INSTRUCTION =
  /^\s*(FROM|RUN|CMD|LABEL|MAINTAINER|EXPOSE|ENV|ADD|COPY|ENTRYPOINT|VOLUME|USER|WORKDIR|ARG|ONBUILD|STOPSIGNAL|HEALTHCHECK|SHELL)\b/i;
const LINE_BREAK = /\r\n|[\r\n\u0085\u2028\u2029]/;

/** Why v cannot sit on one Dockerfile line, or null. */
function lineProblem(v: string): string | null {
  if (LINE_BREAK.test(v)) {
    const smuggled = v
      .split(LINE_BREAK)
      .slice(1)
      .map((l) => INSTRUCTION.exec(l)?.[1])
      .find(Boolean);
    return smuggled
      ? `smuggles a Dockerfile instruction (${smuggled.toUpperCase()}) after a line break; refused`
      : 'contains a line break; refused';
  }
  if (/[\u0000-\u001f\u007f-\u009f]/.test(v)) return 'contains a control character; refused';
  if (/\\\s*$/.test(v)) return 'ends with a backslash (a line continuation); refused';
  return null;
}

function str(file: string, field: string, v: unknown, max: number): string {
  if (typeof v !== 'string') throw new PlanError(file, field, 'is not a string');
  // A file's final newline is not part of its value; a break inside it is.
  const t = v.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '');
  const problem = lineProblem(t);
  if (problem) throw new PlanError(file, field, problem);
  if (!t) throw new PlanError(file, field, 'is empty');
  if (t.length > max) throw new PlanError(file, field, `is longer than ${max} characters`);
  return t;
}

/** A shell command line (a package.json script, an override): printable ASCII on one line. */
export function command(file: string, field: string, v: unknown): string {
  const t = str(file, field, v, 2000);
  if (!/^[\x20-\x7e]+$/.test(t))
    throw new PlanError(file, field, 'has characters outside printable ASCII; refused');
  return t;
}

/**
 * A path inside the repository or the build stage (a main file, an output folder, a Go package):
 * plain segments, no `..`, nothing a COPY would glob or substitute (`*`, `$`), no leading dash.
 */
export function relPath(file: string, field: string, v: unknown): string {
  const t = str(file, field, v, 255).replace(/^\.\//, '');
  if (t.startsWith('/'))
    throw new PlanError(file, field, `"${t}" is absolute; a path inside the repository is expected`);
  const segments = t.replace(/\/$/, '').split('/');
  if (segments.includes('..'))
    throw new PlanError(file, field, `"${t}" climbs out of the repository (..); refused`);
  if (segments.some((s) => s === '' || s === '.' || !/^[A-Za-z0-9_@+][A-Za-z0-9._@+-]*$/.test(s))) {
    throw new PlanError(
      file,
      field,
      `"${t}" is not a plain relative path (letters, digits, . _ - @ + and /)`,
    );
  }
  return segments.join('/');
}

/** A dotted Python module (`mysite.wsgi`) or a plain identifier. */
export function pyName(file: string, field: string, v: unknown): string {
  const t = str(file, field, v, 200);
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(t))
    throw new PlanError(file, field, `"${t}" is not a Python module name`);
  return t;
}

/** A version or version range as written (`>=18`, `^20.1`, `lts/*`, `~> 3.2`), before reduction. */
export function versionInput(file: string, field: string, v: unknown): string {
  const t = str(file, field, v, 100);
  if (!/^[A-Za-z0-9 .*^~<>=!|,/_+-]+$/.test(t)) throw new PlanError(file, field, `"${t}" is not a version`);
  return t;
}

export function port(file: string, field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 65535)
    throw new PlanError(file, field, 'is not a port (1..65535)');
  return v;
}
