// Container and service log streams as lines: the one splitter the live log topic and the log
// drains share, and the reading of a Swarm service line's task attributes.
import { PassThrough } from 'node:stream';

/** Longest line kept whole; a longer one is cut and marked with an ellipsis by the callers. */
export const MAX_LINE = 8 * 1024;

/**
 * A writable end that calls `onLine` for each complete line; a partial line longer than MAX_LINE
 * is let out as one, so a stream without newlines cannot grow it without bound.
 */
export function lineSplitter(onLine: (line: string) => void): PassThrough {
  let partial = '';
  const pt = new PassThrough();
  pt.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const parts = partial.split(/\r?\n/);
    partial = parts.pop() ?? '';
    if (partial.length > MAX_LINE) {
      parts.push(partial);
      partial = '';
    }
    for (const l of parts) onLine(l);
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
