import { open, stat, type FileHandle } from 'node:fs/promises';
import { readSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { LineSplitter, MAX_LINE_BYTES, parseAccessLine, type AccessEntry } from './parse.js';

export type { AccessEntry } from './parse.js';

/** Where Caddy's packaged configuration usually writes its access log. */
export const DEFAULT_ACCESS_LOG = '/var/log/caddy/access.log';

export type AccessObserver = (entry: AccessEntry) => void;

export interface TailerOptions {
  /** Read the file from its beginning instead of its end (tests, benchmarks, replay). */
  fromStart?: boolean;
  /** Stat poll period, the fallback when file-system events are missed or unavailable. */
  pollIntervalMs?: number;
  /** Use fs.watch on the log's folder in addition to the poll (default true). */
  watch?: boolean;
  /** Read size; also the bound of the read buffer. */
  chunkBytes?: number;
  maxLineBytes?: number;
  /** How long a rotated-away file is still read for writers that have not reopened yet. */
  drainRotatedMs?: number;
  now?: () => number;
}

export interface TailerStatus {
  reading: boolean;
  path: string;
  error?: string;
  /** Non-empty lines read, bad ones included. */
  lines: number;
  parseErrors: number;
  /** When the last line was read (ISO), null before the first. */
  lastLineAt: string | null;
}

interface Cursor {
  fh: FileHandle;
  dev: number;
  ino: number;
  offset: number;
  /**
   * The first bytes of the last complete line read, and where they sit. Caddy lines start with
   * a microsecond timestamp, so if those bytes changed the file was truncated and refilled.
   */
  sig: Buffer;
  sigLen: number;
  sigOffset: number;
  splitter: LineSplitter;
  /** For a rotated-away file: when to stop reading it. */
  closeAt?: number;
}

const SIG_BYTES = 64;
/** About 1 MiB of log per event-loop turn while catching up (~10 ms of parsing). */
const YIELD_EVERY = 16;

function errorText(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return 'file not found';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'path is a directory';
  return code ? `cannot read (${code})` : 'cannot read';
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** One reader of the proxy's access log, feeding every consumer. */
    tailer: AccessLogTailer;
  }
}

/**
 * Follows Caddy's JSON access log like `tail -F`: reads appended bytes by descriptor from the
 * last offset in bounded chunks, survives rotation by rename (drains the old file, then
 * switches to the new one at the path) and by truncation, and hands each parsed entry to
 * every subscriber. One tailer feeds all consumers so the file is read once.
 */
export class AccessLogTailer {
  readonly path: string;
  private readonly opts: Required<Omit<TailerOptions, 'now'>> & { now: () => number };
  private readonly buf: Buffer;
  private observers: AccessObserver[] = [];
  private current: Cursor | null = null;
  private rotated: Cursor[] = [];
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;
  private opening = true;
  private running = false;
  private rerun = false;
  private idle: Array<() => void> = [];
  private error: string | undefined;
  private lines = 0;
  private parseErrors = 0;
  private lastLineAt = 0;
  private chunkNow = 0;

  constructor(path: string = DEFAULT_ACCESS_LOG, options: TailerOptions = {}) {
    this.path = path;
    this.opts = {
      fromStart: options.fromStart ?? false,
      pollIntervalMs: options.pollIntervalMs ?? 2000,
      watch: options.watch ?? true,
      chunkBytes: options.chunkBytes ?? 64 * 1024,
      maxLineBytes: options.maxLineBytes ?? MAX_LINE_BYTES,
      drainRotatedMs: options.drainRotatedMs ?? 5000,
      now: options.now ?? Date.now,
    };
    this.buf = Buffer.allocUnsafe(this.opts.chunkBytes);
  }

  subscribe(observer: AccessObserver): () => void {
    this.observers = [...this.observers, observer];
    return () => {
      this.observers = this.observers.filter((o) => o !== observer);
    };
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    if (this.opts.watch) {
      try {
        const name = basename(this.path);
        this.watcher = watch(dirname(this.path), { persistent: false }, (_event, file) => {
          if (!file || file === name) this.schedule();
        });
        // A vanished folder or an exhausted inotify budget leaves the poll in charge.
        this.watcher.on('error', () => {
          this.watcher?.close();
          this.watcher = null;
        });
      } catch {
        this.watcher = null;
      }
    }
    this.timer = setInterval(() => this.schedule(), this.opts.pollIntervalMs);
    this.timer.unref();
    this.schedule();
  }

  /** Resolves once everything written so far has been read (used by tests and the bench). */
  catchUp(): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped || !this.started) return resolve();
      this.idle.push(resolve);
      if (this.running) this.rerun = true;
      else this.schedule();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    this.watcher = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.running) await new Promise<void>((r) => this.idle.push(r));
    for (const c of [this.current, ...this.rotated]) if (c) await c.fh.close().catch(() => {});
    this.current = null;
    this.rotated = [];
    for (const r of this.idle.splice(0)) r();
  }

  status(): TailerStatus {
    const s: TailerStatus = {
      reading: this.started && !this.stopped && this.current !== null && this.error === undefined,
      path: this.path,
      lines: this.lines,
      parseErrors: this.parseErrors,
      lastLineAt: this.lastLineAt ? new Date(this.lastLineAt).toISOString() : null,
    };
    if (!this.started) s.error = 'not started';
    else if (this.stopped) s.error = 'stopped';
    else if (this.error !== undefined) s.error = this.error;
    else if (this.current === null) s.error = 'not opened yet';
    return s;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.running) {
      this.rerun = true;
      return;
    }
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    let progressed = true;
    while (!this.stopped && (this.rerun || progressed)) {
      this.rerun = false;
      try {
        progressed = await this.pumpOnce();
      } catch (e) {
        this.error = errorText(e);
        progressed = false;
      }
    }
    this.running = false;
    for (const r of this.idle.splice(0)) r();
  }

  /** One pass over the files; true when it read any byte. */
  private async pumpOnce(): Promise<boolean> {
    let read = 0;
    const now = this.opts.now();
    for (const c of this.rotated) read += await this.readCursor(c);
    const keep: Cursor[] = [];
    for (const c of this.rotated) {
      if ((c.closeAt ?? 0) <= now) await this.retire(c);
      else keep.push(c);
    }
    this.rotated = keep;

    if (this.current === null) {
      const c = await this.openCursor(this.opening && !this.opts.fromStart);
      if (c === null) return read > 0;
      this.current = c;
      this.opening = false;
    }
    read += await this.readCursor(this.current);

    let st;
    try {
      st = await stat(this.path);
    } catch (e) {
      // Renamed away and not recreated yet: keep reading the file we hold.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return read > 0;
      throw e;
    }
    if (st.ino !== this.current.ino || st.dev !== this.current.dev) {
      read += await this.readCursor(this.current);
      const old = this.current;
      old.closeAt = now + this.opts.drainRotatedMs;
      this.rotated.push(old);
      this.current = null;
      const c = await this.openCursor(false);
      if (c !== null) {
        this.current = c;
        read += await this.readCursor(c);
      }
    }
    this.error = undefined;
    return read > 0;
  }

  private async openCursor(atEnd: boolean): Promise<Cursor | null> {
    let fh: FileHandle;
    try {
      fh = await open(this.path, 'r');
    } catch (e) {
      this.error = errorText(e);
      // A log that appears after boot is new content: read it from its start.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') this.opening = false;
      return null;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
      const offset = atEnd ? st.size : 0;
      const splitter = new LineSplitter(
        (line) => this.onLine(line),
        () => {
          this.lines++;
          this.parseErrors++;
        },
        this.opts.maxLineBytes,
      );
      this.error = undefined;
      return {
        fh,
        dev: st.dev,
        ino: st.ino,
        offset,
        sig: Buffer.alloc(SIG_BYTES),
        sigLen: 0,
        sigOffset: 0,
        splitter,
      };
    } catch (e) {
      await fh.close().catch(() => {});
      this.error = errorText(e);
      return null;
    }
  }

  private async retire(c: Cursor): Promise<void> {
    if (c.splitter.reset()) {
      this.lines++;
      this.parseErrors++;
    }
    await c.fh.close().catch(() => {});
  }

  private async truncated(c: Cursor, size: number): Promise<boolean> {
    if (size < c.offset) return true;
    // Truncated and refilled past our offset before we looked: size alone cannot tell.
    if (c.sigLen > 0) {
      const { bytesRead } = await c.fh.read(this.buf, 0, c.sigLen, c.sigOffset);
      if (bytesRead !== c.sigLen || this.buf.compare(c.sig, 0, c.sigLen, 0, c.sigLen) !== 0) return true;
    }
    return false;
  }

  private async readCursor(c: Cursor): Promise<number> {
    const st = await c.fh.stat();
    if (await this.truncated(c, st.size)) {
      if (c.splitter.reset()) {
        this.lines++;
        this.parseErrors++;
      }
      c.offset = 0;
      c.sigLen = 0;
    }
    // Bounded by the size seen now, so a busy writer cannot keep one pass going forever.
    const limit = st.size;
    let total = 0;
    let sinceYield = 0;
    while (c.offset < limit && !this.stopped) {
      // Synchronous reads of a file that is being appended come from the page cache and take
      // microseconds; a thread-pool round trip per chunk cost a third of the throughput when
      // catching up. The pass yields to the event loop every YIELD_EVERY chunks instead.
      const bytesRead = readSync(c.fh.fd, this.buf, 0, Math.min(this.buf.length, limit - c.offset), c.offset);
      if (bytesRead === 0) break;
      const lastNl = this.buf.lastIndexOf(10, bytesRead - 1);
      if (lastNl !== -1) {
        const start = lastNl > 0 ? this.buf.lastIndexOf(10, lastNl - 1) + 1 : 0;
        c.sigLen = Math.min(SIG_BYTES, lastNl + 1 - start);
        c.sigOffset = c.offset + start;
        this.buf.copy(c.sig, 0, start, start + c.sigLen);
      }
      c.offset += bytesRead;
      total += bytesRead;
      this.chunkNow = this.opts.now();
      c.splitter.push(this.buf, bytesRead);
      if (++sinceYield === YIELD_EVERY) {
        sinceYield = 0;
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    return total;
  }

  private onLine(line: string): void {
    this.lines++;
    this.lastLineAt = this.chunkNow;
    const entry = parseAccessLine(line, this.chunkNow);
    if (entry === null) {
      this.parseErrors++;
      return;
    }
    const obs = this.observers;
    for (let i = 0; i < obs.length; i++) {
      try {
        obs[i](entry);
      } catch {
        // A faulty consumer must not stop the others or the tailer.
      }
    }
  }
}
