// Runs the real `svc` CLI as a child process, as an operator or systemd would, and reads its log.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { poll } from './wait.js';
import { SERVE_NODE_OPTIONS } from '#lib/install/texts.js';

export const CLI = fileURLToPath(new URL('../../runtime/cli.js', import.meta.url));

/** Variables that would leak the developer's own configuration into a spawned CLI. */
export function cleanEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_')) env[k] = v;
  return { SVC_ENV_FILE: '/nonexistent/svc.env', ...env, ...vars };
}

export interface Served {
  proc: ChildProcess;
  /** Every stdout line, parsed when it is JSON. */
  lines: Array<Record<string, any>>;
  stderr: string[];
  url: string;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

function follow(proc: ChildProcess) {
  const lines: Array<Record<string, any>> = [];
  const stderr: string[] = [];
  createInterface({ input: proc.stdout! }).on('line', (l) => {
    try {
      lines.push(JSON.parse(l));
    } catch {
      lines.push({ raw: l });
    }
  });
  createInterface({ input: proc.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { lines, stderr, exited };
}

/** `svc serve`; resolves once it logged that it listens (or rejects with what it printed if it exits). */
export async function serve(vars: Record<string, string>, timeoutMs = 60_000): Promise<Served> {
  const proc = spawn(process.execPath, [...SERVE_NODE_OPTIONS, CLI, 'serve'], {
    env: cleanEnv({ SVC_HOST: '127.0.0.1', SVC_PORT: '0', SVC_LOG_LEVEL: 'info', ...vars }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { lines, stderr, exited } = follow(proc);
  let code: number | null | undefined;
  void exited.then((c) => (code = c));
  const listening = await Promise.race([
    poll(
      'svc serve to listen',
      () => lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('listening')),
      timeoutMs,
      20,
    ),
    exited.then((c) => {
      throw new Error(`svc serve exited with ${c}: ${stderr.join('\n')}`);
    }),
  ]).catch((e) => {
    proc.kill('SIGKILL');
    throw e;
  });
  return {
    proc,
    lines,
    stderr,
    url: listening.url,
    exited,
    async stop() {
      if (code === undefined) proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** `svc serve` that is expected to refuse to boot: its exit code and what it printed. */
export async function serveFails(
  vars: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, 'serve'],
      { env: cleanEnv({ SVC_HOST: '127.0.0.1', SVC_PORT: '0', ...vars }), timeout: timeoutMs },
      (err, stdout, stderr) => {
        if (!err) return reject(new Error('svc serve exited 0'));
        if ((err as { killed?: boolean }).killed)
          return reject(
            new Error(`svc serve did not stop within ${timeoutMs} ms; it printed: ${stdout}${stderr}`),
          );
        resolve({
          code: typeof err.code === 'number' ? err.code : null,
          stderr: String(stderr),
          stdout: String(stdout),
        });
      },
    );
  });
}

/** Any other CLI command, with a deadline: a regression that hangs fails instead of blocking the run. */
export function runCli(
  args: string[],
  vars: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: cleanEnv(vars), timeout: timeoutMs },
      (err, stdout, stderr) => {
        if (err && (err as { killed?: boolean }).killed)
          return reject(new Error(`svc ${args.join(' ')} did not finish within ${timeoutMs} ms`));
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        });
      },
    );
  });
}
