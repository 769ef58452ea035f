// The one argument parser of the `svc` command. Every command is one declaration (name, summary,
// usage, options, positionals, run) in a table (runtime/cli/table.ts); this file finds the
// command, answers `--help` (its usage, nothing else), parses the rest with node's util.parseArgs
// and maps the outcome to an exit status: 0, 1 for a failure (one line on stderr), 2 for a usage
// error (the message and the usage). Adding a command is adding a declaration: the parser does not
// change.
import { parseArgs } from 'node:util';

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export interface OptionSpec {
  type: 'boolean' | 'string';
  short?: string;
  /** A `string` option given more than once collects a list. */
  multiple?: boolean;
  /** The value's placeholder in the help (`DIR`, `URL`). */
  value?: string;
  description: string;
}
export type Options = Record<string, OptionSpec>;

type ValueOf<O extends OptionSpec> = O['type'] extends 'boolean'
  ? boolean
  : O['multiple'] extends true
    ? string[]
    : string;
export type Values<O extends Options> = { [K in keyof O]?: ValueOf<O[K]> };

export interface Invocation<O extends Options> {
  values: Values<O>;
  /** Positional arguments (before `--`). */
  args: string[];
  /** What follows `--`, untouched (a command to run elsewhere). */
  rest: string[];
  io: Io;
}

export interface Command<O extends Options = Options> {
  /** One or more words: `doctor`, `operators reset`. */
  name: string;
  /** One line for the overview and the top of the help. */
  summary: string;
  /** The arguments after the name, for the usage line: `<username>`, `[--json]`. */
  usage: string;
  options?: O;
  /** How many positional arguments it takes (default none). */
  args?: { min: number; max: number; names?: string };
  /** Allows `-- <words...>` after the options (handed over as `rest`). */
  passthrough?: boolean;
  /** Longer text for the help, after the summary. */
  details?: string;
  /** The exit status (void: 0). Throw CliFailure for a failure, UsageError for a usage error. */
  run(inv: Invocation<O>): Promise<number | void> | number | void;
}

/** A declaration with its option types inferred: `command({ name, options: {...}, run }) `. */
export function command<const O extends Options = Record<never, OptionSpec>>(c: Command<O>): Command {
  return c as unknown as Command;
}

/** A failure: exit 1 with this one line on stderr (prefixed by `svc <command>: `). */
export class CliFailure extends Error {}
/** A usage error: exit 2, the message and the command's usage on stderr. */
export class UsageError extends Error {}

const HELP: OptionSpec = { type: 'boolean', short: 'h', description: 'print this help and do nothing else' };

export function usageLine(c: Command): string {
  return `usage: svc ${c.name}${c.usage ? ` ${c.usage}` : ''}`;
}

function optionLabel(name: string, o: OptionSpec): string {
  const long = `--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
  return o.short ? `-${o.short}, ${long}` : `    ${long}`;
}

/** The whole help of one command. */
export function helpText(c: Command): string[] {
  const opts: Array<[string, OptionSpec]> = [...Object.entries(c.options ?? {}), ['help', HELP]];
  const labels = opts.map(([n, o]) => optionLabel(n, o));
  const width = Math.max(...labels.map((l) => l.length));
  const lines = [usageLine(c), '', c.summary];
  if (c.details) lines.push('', ...c.details.split('\n'));
  lines.push('', 'options:', ...opts.map(([, o], i) => `  ${labels[i]!.padEnd(width)}  ${o.description}`));
  return lines;
}

/** The overview: every command (or those of one group) with its summary. */
export function overview(commands: readonly Command[], group?: string): string[] {
  const shown = group ? commands.filter((c) => c.name.startsWith(`${group} `)) : commands;
  const heads = shown.map((c) => `svc ${c.name}${c.usage ? ` ${c.usage}` : ''}`);
  const width = Math.min(48, Math.max(...heads.map((h) => h.length)));
  return [
    group ? `usage: svc ${group} <subcommand>` : 'usage: svc <command> [options]',
    '',
    ...shown.map((c, i) =>
      heads[i]!.length > width
        ? `  ${heads[i]}\n  ${' '.repeat(width)}  ${c.summary}`
        : `  ${heads[i]!.padEnd(width)}  ${c.summary}`,
    ),
    '',
    `Every command answers --help with its usage and does nothing else.`,
  ];
}

const wantsHelp = (argv: readonly string[]) => {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

/** The declared command named by the longest run of leading words; the rest are its arguments. */
function find(commands: readonly Command[], argv: readonly string[]): { c: Command; argv: string[] } | null {
  let best: { c: Command; argv: string[] } | null = null;
  for (const c of commands) {
    const words = c.name.split(' ');
    if (words.every((w, i) => argv[i] === w) && (!best || words.length > best.c.name.split(' ').length))
      best = { c, argv: argv.slice(words.length) };
  }
  return best;
}

function parse(c: Command, argv: string[]): Omit<Invocation<Options>, 'io'> {
  const end = c.passthrough ? argv.indexOf('--') : -1;
  const mine = end < 0 ? argv : argv.slice(0, end);
  const rest = end < 0 ? [] : argv.slice(end + 1);
  const options: Record<string, { type: 'boolean' | 'string'; short?: string; multiple?: boolean }> = {};
  for (const [name, o] of Object.entries(c.options ?? {}))
    options[name] = {
      type: o.type,
      ...(o.short ? { short: o.short } : {}),
      ...(o.multiple ? { multiple: true } : {}),
    };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: mine, options, strict: true, allowPositionals: true });
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const { min, max, names } = c.args ?? { min: 0, max: 0 };
  const n = parsed.positionals.length;
  if (n < min) throw new UsageError(`${names ?? 'an argument'} is missing`);
  if (n > max)
    throw new UsageError(
      max === 0
        ? `unexpected argument ${JSON.stringify(parsed.positionals[0]!.slice(0, 64))}`
        : `too many arguments (${JSON.stringify(parsed.positionals[max]!.slice(0, 64))})`,
    );
  return { values: parsed.values as Values<Options>, args: parsed.positionals, rest };
}

/**
 * Runs `argv` (the words after `svc`) against the table and answers the exit status. Nothing of a
 * command runs when the words ask for help or do not parse.
 */
export async function runCommand(
  commands: readonly Command[],
  argv: readonly string[],
  io: Io,
): Promise<number> {
  const found = find(commands, argv);
  if (!found) {
    const group = argv[0] && commands.some((c) => c.name.startsWith(`${argv[0]} `)) ? argv[0] : undefined;
    if (argv.length === 0 || (argv.length === 1 && wantsHelp(argv))) {
      for (const l of overview(commands)) (argv.length ? io.out : io.err)(l);
      return argv.length ? 0 : 2;
    }
    if (group && wantsHelp(argv.slice(1, 2))) {
      for (const l of overview(commands, group)) io.out(l);
      return 0;
    }
    io.err(
      group
        ? `svc ${group}: ${argv[1] === undefined ? 'which subcommand?' : `unknown subcommand ${argv[1]}`}`
        : `svc: unknown command ${JSON.stringify(argv[0]!.slice(0, 64))}`,
    );
    for (const l of overview(commands, group)) io.err(l);
    return 2;
  }
  const { c } = found;
  if (wantsHelp(found.argv)) {
    for (const l of helpText(c)) io.out(l);
    return 0;
  }
  try {
    const inv = parse(c, found.argv);
    return (await c.run({ ...inv, io })) ?? 0;
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`svc ${c.name}: ${e.message}`);
      io.err(usageLine(c));
      return 2;
    }
    const message = e instanceof Error ? e.message : String(e);
    io.err(`svc ${c.name}: ${message.replace(/\s*\n\s*/g, ' ')}`);
    return 1;
  }
}
