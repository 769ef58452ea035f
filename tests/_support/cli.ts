// Runs the real `svc` CLI as a child process, as an operator or systemd would, and reads its log.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { poll } from './wait.js';
import { join } from 'node:path';
import { SERVE_NODE_OPTIONS } from '#lib/install/texts.js';
import { DOCKER_SOCKET } from './docker.js';
import { TEST_MASTER_KEY } from './server.js';

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

/**
 * `svc serve` on a data folder and a fixed port, as its own process (a test may kill it with
 * SIGKILL and start it again on the same data), answering once `/api/health` does. `extra` adds
 * or overrides variables (e.g. `SVC_PROXY: 'off'`).
 */
export async function serveOn(
  dataDir: string,
  port: number,
  extra: Record<string, string> = {},
): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SVC_DATA_DIR: dataDir,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: String(port),
      SVC_MASTER_KEY: TEST_MASTER_KEY,
      SVC_PASSWORD_COST: '14',
      SVC_AUTH_RATE_LIMIT: '1000',
      SVC_LOG_LEVEL: 'warn',
      SVC_DOCKER_SOCKET: DOCKER_SOCKET,
      SVC_ACCESS_LOG: join(dataDir, 'access.log'),
      SVC_SECURITY_DIR: join(dataDir, 'security'),
      ...extra,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await poll(
    'the server to answer',
    async () => (await fetch(`${url}/api/health`).catch(() => null))?.ok,
    60_000,
    200,
  );
  return { url, proc };
}
