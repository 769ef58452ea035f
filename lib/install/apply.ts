// Makes a plan's changes, in order. Each file is replaced atomically; a command that fails stops the
// run there, and running the same command again finishes the job (the plan is recomputed from what
// is on disk, so what was done is not redone).
import { chmod, chown, lstat, mkdir, rm, rmdir, symlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../util/files.js';
import { under } from './paths.js';
import { describeChange, type Change } from './plan.js';
import type { CmdRunner } from './state.js';

export class ApplyError extends Error {}

/** The files install writes belong to root; a run as root under --root makes them so too. */
async function ownByRoot(path: string): Promise<void> {
  if ((process.getuid?.() ?? 1) === 0) await chown(path, 0, 0);
}

export async function applyChange(root: string, c: Change, run: CmdRunner): Promise<void> {
  const at = c.kind === 'command' ? '' : under(root, c.path);
  switch (c.kind) {
    case 'dir':
      // Parents the root lacks (/var/lib under a fresh --root) get the usual 0755, not the leaf's mode.
      await mkdir(dirname(at), { recursive: true, mode: 0o755 });
      await mkdir(at, { mode: c.mode }).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      await chmod(at, c.mode);
      await ownByRoot(at);
      return;
    case 'file':
      await writeFileAtomic(at, c.text, c.mode);
      await ownByRoot(at);
      return;
    case 'mode':
      await chmod(at, c.mode);
      return;
    case 'symlink':
      await mkdir(dirname(at), { recursive: true, mode: 0o755 });
      if (await lstat(at).catch(() => null)) await rm(at, { force: true });
      await symlink(c.target, at);
      return;
    case 'remove':
      await rm(at, { force: true, recursive: c.recursive ?? false });
      return;
    case 'rmdir':
      await rmdir(at).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT' && e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e;
      });
      return;
    case 'command': {
      const [cmd, ...args] = c.argv;
      const r = await run(cmd!, args, { ...process.env, DEBIAN_FRONTEND: 'noninteractive' });
      if (r.code !== 0)
        throw new ApplyError(
          `${c.argv.join(' ')} failed (exit ${r.code ?? 'signal'}): ${(r.stderr || r.stdout).trim().slice(-2000)}`,
        );
      return;
    }
  }
}

export async function applyPlan(
  root: string,
  changes: readonly Change[],
  run: CmdRunner,
  report: (line: string) => void,
): Promise<void> {
  for (const c of changes) {
    report(describeChange(c));
    await applyChange(root, c, run);
  }
}
