// Start commands become exec-form CMD arrays: plain words when the command has no shell syntax, else
// `sh -c` with the whole line as one JSON string (the app's own command, never Dockerfile text).
import { command } from './validate.js';
import { PlanError } from './types.js';

const WORD = '[A-Za-z0-9_./:@%+,=-]+';
const PLAIN = new RegExp(`^${WORD}( +${WORD})*$`);

/** The words of a command that needs no shell (no quotes, `$`, operators, redirections, env prefix). */
export function plainWords(cmd: string): string[] | null {
  if (!PLAIN.test(cmd)) return null;
  const words = cmd.split(/ +/);
  return words[0]!.includes('=') ? null : words;
}

/** A validated start command as a CMD argv; `shell: false` (distroless) refuses what needs a shell. */
export function startArgv(file: string, field: string, raw: unknown, shell = true): string[] {
  const cmd = command(file, field, raw);
  const words = plainWords(cmd);
  if (words) return words;
  if (!shell)
    throw new PlanError(
      file,
      field,
      'needs a shell (quotes, $, operators), and the runtime image has none; give plain words',
    );
  return ['/bin/sh', '-c', cmd];
}

/** How a CMD argv reads in the plan's `start`. */
export const showArgv = (argv: string[]) =>
  argv[0] === '/bin/sh' && argv[1] === '-c' ? argv[2]! : argv.join(' ');
