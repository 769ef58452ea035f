// What the root holds now, read once before planning: the only part of planning that looks at the host.
import { existsSync } from 'node:fs';
import { lstat, readFile, readlink } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { CADDY_API_UNIT, CADDY_UNIT, UNIT_NAME, under } from './paths.js';
import { parseOsRelease, WATCHED_PATHS, type HostState, type PathState } from './plan.js';
import { SYSCTL_SETTINGS } from './texts.js';

export interface CmdResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program with an argument array (never a shell); tests inject a recorder. */
export type CmdRunner = (cmd: string, args: readonly string[], env?: NodeJS.ProcessEnv) => Promise<CmdResult>;

export const execRunner: CmdRunner = (cmd, args, env) =>
  new Promise((done) => {
    execFile(
      cmd,
      [...args],
      { timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024, env: env ?? process.env },
      (err, stdout, stderr) => {
        const code = err ? (err as NodeJS.ErrnoException).code : 0;
        done({
          code: typeof code === 'number' ? code : err ? null : 0,
          stdout: String(stdout),
          stderr: String(stderr) || (err?.message ?? ''),
        });
      },
    );
  });

/** Only the files install writes are read: a few KiB at most. */
const READ_TEXT_LIMIT = 1024 * 1024;

export async function pathState(path: string): Promise<PathState | null> {
  try {
    const st = await lstat(path);
    if (st.isSymbolicLink())
      return { type: 'symlink', mode: st.mode, uid: st.uid, target: await readlink(path) };
    if (st.isDirectory()) return { type: 'dir', mode: st.mode, uid: st.uid };
    const s: PathState = { type: 'file', mode: st.mode, uid: st.uid };
    if (st.isFile() && st.size <= READ_TEXT_LIMIT) s.text = await readFile(path, 'utf8');
    return s;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR')
      return null;
    throw e;
  }
}

/** Package names dpkg reports as installed, from its status file. */
export function installedPackages(status: string): Set<string> {
  const out = new Set<string>();
  for (const para of status.split(/\n\s*\n/)) {
    const name = /^Package:\s*(\S+)/m.exec(para)?.[1];
    if (name && /^Status:.*\binstalled$/m.test(para) && !/^Status:.*\bnot-installed$/m.test(para))
      out.add(name);
  }
  return out;
}

export async function readHostState(root: string, run: CmdRunner = execRunner): Promise<HostState> {
  const live = root === '/';
  const paths: Record<string, PathState | null> = {};
  for (const p of WATCHED_PATHS) paths[p] = await pathState(under(root, p));
  const osText = await readFile(under(root, '/etc/os-release'), 'utf8').catch(() =>
    readFile(under(root, '/usr/lib/os-release'), 'utf8').catch(() => null),
  );
  const status = await readFile(under(root, '/var/lib/dpkg/status'), 'utf8').catch(() => '');
  const systemd = live && existsSync('/run/systemd/system');
  const active: Record<string, boolean> = {};
  if (systemd) {
    for (const u of [UNIT_NAME, CADDY_API_UNIT, CADDY_UNIT, 'docker.service']) {
      active[u] = (await run('systemctl', ['is-active', '--quiet', u])).code === 0;
    }
  }
  const sysctl: Record<string, string | null> = {};
  if (live) {
    for (const s of SYSCTL_SETTINGS) {
      sysctl[s.key] = await readFile(`/proc/sys/${s.key.replace(/\./g, '/')}`, 'utf8').then(
        (v) => v.trim(),
        () => null,
      );
    }
  }
  return {
    live,
    os: osText === null ? null : parseOsRelease(osText),
    paths,
    packages: installedPackages(status),
    systemd,
    active,
    sysctl,
  };
}
