#!/usr/bin/env node
// The host security agent: run as root every minute (systemd timer or cron, installed by
// `svc security-agent on`). It only READS firewall and fail2ban state and writes one snapshot
// file atomically; it never bans, unbans or changes a rule.
//
//   node dist/runtime/security-agent.js [--out <dir>] [--fail2ban-socket <path>]
//
// Defaults: --out $SVC_SECURITY_DIR or /var/lib/svc/security; --fail2ban-socket
// $SVC_FAIL2BAN_SOCKET or fail2ban's own default.
import { execFile } from 'node:child_process';
import { mkdir, chmod } from 'node:fs/promises';
import { writeFileAtomic } from '#lib/util/files.js';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { collectHostSnapshot, type Runner } from '#lib/security/collect.js';
import { DEFAULT_SECURITY_DIR, SNAPSHOT_FILE, type HostSnapshot } from '#lib/security/snapshot.js';

/** Timers and cron start programs with a minimal PATH; the tools live in sbin. */
const AGENT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const COMMAND_TIMEOUT_MS = 15_000;

export const execRunner: Runner = (cmd, args) =>
  new Promise((resolve) => {
    execFile(
      cmd,
      [...args],
      {
        timeout: COMMAND_TIMEOUT_MS,
        maxBuffer: 8 * 1024 * 1024,
        env: { ...process.env, PATH: `${AGENT_PATH}:${process.env.PATH ?? ''}`, LC_ALL: 'C', LANG: 'C' },
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        const code = err ? (err as NodeJS.ErrnoException).code : 0;
        resolve({
          code: typeof code === 'number' ? code : err ? null : 0,
          stdout: String(stdout ?? ''),
          stderr: String(stderr ?? '') || (err && typeof code !== 'number' ? err.message : ''),
          missing: code === 'ENOENT',
        });
      },
    );
  });

/** temp file in the same folder, fsync, rename: readers see the old or the new snapshot, never half. */
export async function writeSnapshotAtomically(dir: string, snapshot: HostSnapshot): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  const final = join(dir, SNAPSHOT_FILE);
  await writeFileAtomic(final, JSON.stringify(snapshot, null, 1) + '\n', 0o644);
  return final;
}

export interface AgentArgs {
  out: string;
  fail2banSocket?: string;
}

export function parseAgentArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): AgentArgs {
  const args: AgentArgs = { out: env.SVC_SECURITY_DIR || DEFAULT_SECURITY_DIR };
  if (env.SVC_FAIL2BAN_SOCKET) args.fail2banSocket = env.SVC_FAIL2BAN_SOCKET;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v === '') throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--out') args.out = value();
    else if (a === '--fail2ban-socket') args.fail2banSocket = value();
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

export async function runAgent(argv: readonly string[], run: Runner = execRunner): Promise<string> {
  const args = parseAgentArgs(argv);
  const snapshot = await collectHostSnapshot(run, { fail2banSocket: args.fail2banSocket });
  return writeSnapshotAtomically(args.out, snapshot);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runAgent(process.argv.slice(2)).then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(`security-agent: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
