// Shared by the security tests: temp dirs, polling with a deadline, free ports, log lines,
// and the "real component present?" gate (skip loudly locally, fail under CI).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
export { freePort } from '../../_support/net.js';
import { poll } from '../../_support/wait.js';
import { missing } from '../../_support/ci.js';

export const run = promisify(execFile);
const OVERRIDE = 'SVC_REQUIRE_SECURITY_TOOLS';

export async function tempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `svc-sec-${prefix}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Polls until `check` is truthy; generous deadline because CI machines are slow, never a timed assertion. */
export function waitFor<T>(check: () => T | Promise<T>, what: string, deadlineMs = 30_000): Promise<T> {
  return poll(what, check, deadlineMs, 50);
}

export async function haveCommand(cmd: string, args: string[] = ['--version']): Promise<boolean> {
  try {
    await run(cmd, args, { timeout: 15_000 });
    return true;
  } catch (e) {
    return (
      (e as NodeJS.ErrnoException).code !== 'ENOENT' && typeof (e as { code?: unknown }).code === 'number'
    );
  }
}

/** Skips (loudly) when a host tool is missing; under CI a missing tool is a failure. */
export async function need(t: TestContext, cmd: string, args?: string[]): Promise<boolean> {
  if (await haveCommand(cmd, args)) return true;
  return missing(t, `${cmd} is not installed`, OVERRIDE);
}

/** One Caddy-shaped JSON access-log line. */
export function caddyLine(o: {
  ts?: number;
  ip?: string;
  clientIp?: string;
  host?: string;
  method?: string;
  uri?: string;
  status?: number;
  pad?: string;
}): string {
  const request: Record<string, unknown> = {
    remote_ip: o.ip ?? '192.0.2.1',
    remote_port: '51234',
    proto: 'HTTP/1.1',
    method: o.method ?? 'GET',
    host: o.host ?? 'example.test',
    uri: o.uri ?? '/',
    headers: { 'User-Agent': ['test'], Accept: ['*/*'] },
  };
  if (o.clientIp !== undefined) request.client_ip = o.clientIp;
  return JSON.stringify({
    level: 'info',
    ts: o.ts ?? Date.now() / 1000,
    logger: 'http.log.access',
    msg: 'handled request',
    request,
    bytes_read: 0,
    user_id: o.pad ?? '',
    duration: 0.0001,
    size: 2,
    status: o.status ?? 200,
    resp_headers: { Server: ['Caddy'] },
  });
}

/** Network namespaces and nft need root; skip loudly without it (fail under CI). */
export function needRoot(t: TestContext): boolean {
  if ((process.getuid?.() ?? 0) === 0) return true;
  return missing(t, 'this test needs root (network namespaces, nft)', OVERRIDE);
}
