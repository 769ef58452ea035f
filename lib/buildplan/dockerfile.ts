// Writes a Dockerfile one instruction at a time, so no value reaches it unquoted: paths match a plain
// pattern (no spaces, `$`, globs), commands go in JSON exec form, and constant shell lines are ours.
// It also remembers every image it names and holds the final stage to the contract: a non-root USER,
// PORT set, the port exposed, an exec-form CMD.
import type { Plan } from './types.js';

const IMAGE = /^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?$/;
const STAGE = /^[a-z][a-z0-9-]*$/;
const SAFE_PATH = /^[A-Za-z0-9_./@+-]+$/;
const ENV_KEY = /^[A-Z_][A-Z0-9_]*$/;
const ENV_VALUE = /^[A-Za-z0-9_./:@+,=-]*(\$PATH)?$/;
const PRINTABLE = /^[\x20-\x7e]*$/;

function assert(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`dockerfile writer: ${what}`);
}

interface Stage {
  name: string | null;
  user: string | null;
  env: Set<string>;
  expose: boolean;
  cmd: boolean;
}

export class Dockerfile {
  private readonly lines: string[] = [];
  private readonly refs: string[] = [];
  private readonly stages: Stage[] = [];

  /** Every image reference named, in order of first use (stage names excluded). */
  get images(): string[] {
    return [...new Set(this.refs)];
  }

  private get stage(): Stage {
    const s = this.stages[this.stages.length - 1];
    assert(!!s, 'an instruction before FROM');
    return s;
  }

  private emit(line: string): this {
    assert(
      !/[\r\n]/.test(line) && PRINTABLE.test(line) && !/\\\s*$/.test(line),
      `not one plain line: ${JSON.stringify(line)}`,
    );
    this.lines.push(line);
    return this;
  }

  private ref(image: string): void {
    if (this.stages.some((s) => s.name === image)) return;
    assert(IMAGE.test(image), `image reference ${image}`);
    this.refs.push(image);
  }

  comment(text: string): this {
    return this.emit(`# ${text}`);
  }

  from(image: string, as?: string): this {
    this.ref(image);
    if (as !== undefined) assert(STAGE.test(as), `stage name ${as}`);
    if (this.lines.length) this.lines.push('');
    this.stages.push({ name: as ?? null, user: null, env: new Set(), expose: false, cmd: false });
    return this.emit(`FROM ${image}${as ? ` AS ${as}` : ''}`);
  }

  workdir(path: string): this {
    assert(path.startsWith('/') && SAFE_PATH.test(path), `workdir ${path}`);
    return this.emit(`WORKDIR ${path}`);
  }

  copy(sources: string[], dest: string, opts: { from?: string; chown?: string } = {}): this {
    assert(sources.length > 0, 'COPY without a source');
    for (const p of [...sources, dest])
      assert(SAFE_PATH.test(p) && !p.startsWith('-'), `path ${JSON.stringify(p)}`);
    if (opts.from) this.ref(opts.from);
    if (opts.chown) assert(/^[a-z0-9_-]+(:[a-z0-9_-]+)?$/.test(opts.chown), `chown ${opts.chown}`);
    const flags = [opts.from ? `--from=${opts.from}` : '', opts.chown ? `--chown=${opts.chown}` : ''].filter(
      Boolean,
    );
    return this.emit(['COPY', ...flags, ...sources, dest].join(' '));
  }

  /** A shell line written here, from constants only (never a value read from a repository). */
  run(shell: string): this {
    return this.emit(`RUN ${shell}`);
  }

  /** A command from the repository or an override: run by sh, handed over as one JSON string. */
  runCommand(command: string): this {
    return this.emit(`RUN ${JSON.stringify(['/bin/sh', '-c', command])}`);
  }

  /** An install or build step: the operator's override as runCommand does, our own line as run does. */
  runStep(command: string, override: boolean): this {
    return override ? this.runCommand(command) : this.run(command);
  }

  env(vars: Record<string, string | number>): this {
    const pairs = Object.entries(vars).map(([k, v]) => {
      assert(ENV_KEY.test(k) && ENV_VALUE.test(String(v)), `env ${k}`);
      this.stage.env.add(k);
      return `${k}=${v}`;
    });
    return this.emit(`ENV ${pairs.join(' ')}`);
  }

  user(user: string): this {
    assert(/^[a-z0-9_-]+(:[a-z0-9_-]+)?$/.test(user), `user ${user}`);
    this.stage.user = user;
    return this.emit(`USER ${user}`);
  }

  expose(port: number): this {
    assert(Number.isInteger(port) && port > 0 && port < 65536, `port ${port}`);
    this.stage.expose = true;
    return this.emit(`EXPOSE ${port}`);
  }

  cmd(argv: string[]): this {
    assert(argv.length > 0 && argv.every((a) => PRINTABLE.test(a)), 'CMD argv');
    this.stage.cmd = true;
    return this.emit(`CMD ${JSON.stringify(argv)}`);
  }

  text(): string {
    const last = this.stage;
    assert(last.user !== null && !/^(root|0)(:|$)/.test(last.user), 'the final stage runs as root');
    assert(last.env.has('PORT') && last.expose && last.cmd, 'the final stage lacks PORT, EXPOSE or CMD');
    return `${this.lines.join('\n')}\n`;
  }
}

/** The plan around a finished Dockerfile: the images it names and its text (which checks the final stage). */
export function planOf(df: Dockerfile, plan: Omit<Plan, 'images' | 'dockerfile'>): Plan {
  const { stack, detected_from, runtime, install, build, start, port, warnings } = plan;
  return {
    stack,
    detected_from,
    runtime,
    images: df.images,
    install,
    build,
    start,
    port,
    dockerfile: df.text(),
    warnings,
  };
}

/** A word for a shell line: single-quoted unless it is plainly safe. */
export function shq(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Debian-based final stages get this user; the node and distroless images bring their own. */
export const APP_USER = 'app';
const USERADD = `useradd --system --uid 10001 --gid ${APP_USER} --home-dir /app --no-create-home ${APP_USER}`;
export const addAppUser = (df: Dockerfile) =>
  df.run(`groupadd --system --gid 10001 ${APP_USER} && ${USERADD}`);

/** Debian packages (our own names) a final stage needs at run time, without the package lists. */
export function aptInstall(df: Dockerfile, packages: string[]): void {
  const install = `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  df.run(`apt-get update && ${install} && rm -rf /var/lib/apt/lists/*`);
}
