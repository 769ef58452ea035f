// Container and service log streams as lines: the one splitter the live log topic, the log drains
// and the output of one-off runs share, and the reading of a Swarm service line's task attributes.
import { PassThrough, type Readable } from 'node:stream';

/** Longest line kept whole; a longer one is cut and marked with an ellipsis by the callers. */
export const MAX_LINE = 8 * 1024;

/**
 * A writable end that calls `onLine` for each complete line; a partial line longer than `max` is
 * let out as one, so a stream without newlines cannot grow it without bound. What is left when the
 * stream ends (a last line without a newline) is let out too.
 */
export function lineSplitter(onLine: (line: string) => void, max = MAX_LINE): PassThrough {
  let partial = '';
  const pt = new PassThrough();
  pt.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const parts = partial.split(/\r?\n/);
    partial = parts.pop() ?? '';
    if (partial.length > max) {
      parts.push(partial);
      partial = '';
    }
    for (const l of parts) onLine(l);
  });
  pt.on('end', () => {
    if (partial) onLine(partial);
    partial = '';
  });
  return pt;
}

/**
 * A service log line with details: `com.docker.swarm.node.id=…,com.docker.swarm.service.id=…,
 * com.docker.swarm.task.id=… message`. The task (short id) stands where a container name would.
 */
export function swarmLogLine(raw: string): { task: string; line: string } {
  const m = /^((?:[a-z0-9_.-]+=[^,\s]*,)*[a-z0-9_.-]+=[^,\s]*) (.*)$/s.exec(raw);
  if (!m) return { task: '', line: raw };
  const attrs = new Map(m[1]!.split(',').map((kv) => kv.split('=', 2) as [string, string]));
  const task = attrs.get('com.docker.swarm.task.id') ?? '';
  return { task: task ? `task ${task.slice(0, 12)}` : '', line: m[2]! };
}

/** One line of a run's output, with the engine's timestamp. */
export interface OutputLine {
  at: string;
  stream: 'stdout' | 'stderr';
  line: string;
}

/**
 * Reads a multiplexed log stream asked for with `timestamps: true` (a container's or a Swarm
 * service's), leaving out the first `skip` lines (recorded by an earlier read); resolves when the
 * stream ends or `signal` aborts, with how many lines it saw in all.
 */
export async function readTimestampedLines(
  demux: (raw: Readable, out: PassThrough, err: PassThrough) => void,
  raw: Readable,
  skip: number,
  onLine: (l: OutputLine) => void,
  signal: AbortSignal,
): Promise<number> {
  let seen = 0;
  const emit = (stream: OutputLine['stream']) =>
    lineSplitter((text) => {
      if (++seen <= skip) return;
      const m = /^(\d{4}-\d\d-\d\dT[^ ]+) ?(.*)$/s.exec(text);
      onLine({ at: m ? m[1]! : new Date().toISOString(), stream, line: m ? m[2]! : text });
    });
  const out = emit('stdout');
  const err = emit('stderr');
  demux(raw, out, err);
  const stop = () => raw.destroy();
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) stop();
  try {
    await new Promise<void>((resolve) => {
      raw.on('end', resolve);
      raw.on('close', resolve);
      raw.on('error', () => resolve());
    });
  } finally {
    signal.removeEventListener('abort', stop);
    out.end();
    err.end();
    // The splitters hand over a last partial line on their end.
    await new Promise((r) => setImmediate(r));
  }
  return seen;
}
