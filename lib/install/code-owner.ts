// Who can change the code a root service runs. `svc install` writes a unit that runs
// `<checkout>/dist/runtime/cli.js` as root: if anyone but root can change that code (a file they
// own, a folder they may write, one above it they could rename), they become root at the next
// start. The checkout, its package.json (it maps `#lib/*`), everything under dist/ and
// node_modules/, and every folder above the checkout must be owned by root and writable by no
// group or other user. A symlink is judged by what it points at. `svc doctor` runs the same check.
import { lstat, readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export interface CodeProblem {
  path: string;
  why: string;
}

interface Entry {
  uid: number;
  mode: number;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/** What is wrong with one entry (null: root's, written by root only). */
function judge(e: Entry): string | null {
  if (e.uid !== 0) return `owned by uid ${e.uid}`;
  if (e.mode & 0o002) return 'writable by every user';
  if (e.mode & 0o020) return 'writable by its group';
  return null;
}

async function entry(path: string): Promise<Entry | null> {
  try {
    const l = await lstat(path);
    // A symlink is as safe as its target (who can change the link itself is its folder's question).
    return l.isSymbolicLink() ? await stat(path) : l;
  } catch {
    return null;
  }
}

/** Every entry below `dir` (no links followed into other folders), depth first. */
async function* walk(dir: string): AsyncGenerator<string> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const p = join(dir, name);
    yield p;
    const l = await lstat(p).catch(() => null);
    if (l?.isDirectory()) yield* walk(p);
  }
}

/** The folders above `path`, from the root down. */
function above(path: string): string[] {
  const out: string[] = [];
  for (let p = dirname(path); ; p = dirname(p)) {
    out.unshift(p);
    if (dirname(p) === p) return out;
  }
}

/**
 * The places under (and above) `checkout` that someone other than root could change, at most
 * `limit` of them, the folders above first. Empty: root alone can change the code.
 */
export async function codeProblems(checkout: string, limit = 5): Promise<CodeProblem[]> {
  const out: CodeProblem[] = [];
  const check = async (path: string) => {
    const e = await entry(path);
    const why = e ? judge(e) : null;
    if (why) out.push({ path, why });
    return out.length >= limit;
  };
  for (const p of [...above(checkout), checkout, join(checkout, 'package.json')])
    if (await check(p)) return out;
  for (const top of ['dist', 'node_modules']) {
    if (await check(join(checkout, top))) return out;
    for await (const p of walk(join(checkout, top))) if (await check(p)) return out;
  }
  return out;
}

/** The checkout of a CLI script `<checkout>/dist/runtime/cli.js`. */
export const checkoutOf = (cliScript: string): string => dirname(dirname(dirname(cliScript)));

/** One sentence naming the first problem, for install's refusal and doctor's line. */
export function describeProblems(problems: readonly CodeProblem[]): string {
  const [first, ...more] = problems;
  if (!first) return 'the code is owned by root and writable by root only';
  return `${first.path} is ${first.why}${more.length ? ` (and ${more.length}${more.length >= 4 ? '+' : ''} more)` : ''}`;
}
