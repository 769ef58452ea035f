// Runs a database's own clients inside its container (engine exec, argument arrays only).
// Secrets reach the client through the exec's environment, never its command line, where
// `ps` in the container (or the engine's inspect) would show them.
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Engine } from '../docker/index.js';
import { assertOwnedContainer } from '../docker/containers.js';

const STDERR_KEEP = 8 * 1024;

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecHandle {
  stdout: Readable;
  /** Resolves when the process has exited (after stdout ended). */
  done: Promise<{ code: number; stderr: string }>;
}

async function waitExit(exec: import('dockerode').Exec): Promise<number> {
  for (let i = 0; i < 600; i++) {
    const info = await exec.inspect();
    if (!info.Running) return info.ExitCode ?? -1;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the client did not exit');
}

/**
 * Starts `cmd` in the container; its stdout is a stream (a dump is never held whole), stdin is fed
 * from `stdin` when given. Only the tail of stderr is kept, for the error message.
 */
export async function execStream(
  engine: Engine,
  container: string,
  cmd: string[],
  opts: { env?: string[]; stdin?: Readable; user?: string; stoppable?: boolean } = {},
): Promise<ExecHandle> {
  // The engine has no way to kill an exec, and closing the attach connection does not end the
  // process: a dump whose reader gave up (a full disk, a refused upload) would block on its
  // stdout forever, holding its snapshot and table locks. A stoppable client reports its pid
  // (in the container's namespace) on the first stderr line, so a second exec can end it.
  await assertOwnedContainer(engine, container);
  const exec = await engine.docker.getContainer(container).exec({
    Cmd: opts.stoppable ? ['sh', '-c', 'echo "$$" >&2; exec "$@"', 'sh', ...cmd] : cmd,
    Env: opts.env ?? [],
    User: opts.user,
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: !!opts.stdin,
  });
  const stream = (await exec.start({
    hijack: true,
    stdin: !!opts.stdin,
  })) as unknown as NodeJS.ReadWriteStream & import('node:stream').Duplex;
  // Room for a few of the engine's frames while the reader (a backup's gzip) is busy.
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  const err = new PassThrough();
  let stderr = '';
  let pid: string | null = opts.stoppable ? null : '';
  let head = '';
  err.on('data', (c: Buffer) => {
    let text = c.toString('utf8');
    if (pid === null) {
      head += text;
      const nl = head.indexOf('\n');
      if (nl < 0) return;
      pid = /^\d+$/.test(head.slice(0, nl).trim()) ? head.slice(0, nl).trim() : '';
      text = head.slice(nl + 1);
    }
    stderr = (stderr + text).slice(-STDERR_KEEP);
  });
  const drain = demuxWithBackpressure(stream, out, err);
  let finished = false;
  out.on('error', () => {});
  if (opts.stoppable) {
    out.once('close', () => {
      if (finished) return;
      // The reader went away before the end: keep draining the connection (a paused one that
      // is never read again leaves the engine unable to finish this exec, and with it every
      // later exec in the container), end the client, then the connection.
      drain();
      void (async () => {
        if (pid) {
          const k = await engine.docker.getContainer(container).exec({
            Cmd: ['sh', '-c', 'kill -TERM "$1"', 'sh', pid],
            AttachStdout: true,
            AttachStderr: true,
            User: opts.user,
          });
          const ks = await k.start({ hijack: true, stdin: false });
          ks.resume();
          await new Promise((r) => {
            ks.on('end', r);
            ks.on('close', r);
            ks.on('error', r);
          });
        }
      })()
        .catch(() => {})
        .finally(() => stream.destroy());
    });
  }
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  let fed: Promise<void> = Promise.resolve();
  if (opts.stdin) {
    const input = opts.stdin;
    // Half-close after the last byte: the engine then closes the client's stdin.
    fed = new Promise<void>((resolve, reject) => {
      input.on('error', reject);
      input.on('end', () => {
        stream.end();
        resolve();
      });
      input.pipe(stream, { end: false });
    });
  }
  const done = (async () => {
    try {
      await ended;
      // A client may exit before reading all its input (pg_restore --list reads the archive's
      // table of contents only): stop feeding it rather than wait for an end that never comes.
      if (opts.stdin && !opts.stdin.readableEnded) {
        opts.stdin.unpipe(stream);
        opts.stdin.destroy();
      } else await fed;
    } finally {
      finished = true;
      out.end();
      err.end();
    }
    return { code: await waitExit(exec), stderr };
  })();
  done.catch(() => {});
  return { stdout: out, done };
}

/** Runs a client to completion; stdout kept up to `maxOut` bytes. */
export async function execCapture(
  engine: Engine,
  container: string,
  cmd: string[],
  opts: { env?: string[]; stdin?: Readable; maxOut?: number; user?: string } = {},
): Promise<ExecResult> {
  const h = await execStream(engine, container, cmd, opts);
  const max = opts.maxOut ?? 1024 * 1024;
  let stdout = '';
  h.stdout.on('data', (c: Buffer) => {
    if (stdout.length < max) stdout += c.toString('utf8');
  });
  const r = await h.done;
  return { code: r.code, stdout: stdout.slice(0, max), stderr: r.stderr };
}

/** Pipes a client's stdout into `sink`; throws with the client's stderr tail when it fails. */
export async function execInto(
  engine: Engine,
  container: string,
  cmd: string[],
  sink: NodeJS.WritableStream,
  opts: { env?: string[] } = {},
): Promise<void> {
  const h = await execStream(engine, container, cmd, opts);
  const [, r] = await Promise.all([pipeline(h.stdout, sink as import('node:stream').Writable), h.done]);
  if (r.code !== 0)
    throw new Error(
      `${cmd[0]} exited with ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500)}`,
    );
}

/**
 * The engine's multiplexed stream (8-byte frame headers) split into stdout and stderr, pausing
 * the source while stdout's reader is behind. The modem's own demuxer writes regardless of
 * backpressure, so a dump faster than its consumer (gzip + encryption) piled up in memory.
 */
function demuxWithBackpressure(
  src: import('node:stream').Duplex,
  out: PassThrough,
  err: PassThrough,
): () => void {
  let buf: Buffer = Buffer.alloc(0);
  let waiting = false;
  let discarding = false;
  src.on('data', (chunk: Buffer) => {
    if (discarding) return;
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= 8) {
      const len = buf.readUInt32BE(4);
      if (buf.length < 8 + len) break;
      const type = buf[0];
      const payload = buf.subarray(8, 8 + len);
      buf = buf.subarray(8 + len);
      if (type === 2) err.write(payload);
      else if (!out.write(payload) && !waiting) {
        waiting = true;
        src.pause();
        out.once('drain', () => {
          waiting = false;
          src.resume();
        });
      }
    }
  });
  // From now on the output has no reader: read and drop it so the engine can finish the exec.
  return () => {
    discarding = true;
    buf = Buffer.alloc(0);
    src.resume();
  };
}
