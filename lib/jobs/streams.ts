// The run:<id> topic: a new subscriber first gets the output so far (from the table, with its
// sequence numbers) and the run's state, then the live lines and state changes. A line is
// `{type: "line", seq, app_id, service?, at, stream, line}`.
import type { Services } from '../http/handler.js';
import type { BusEvent } from '../events/bus.js';
import { getRunRow, readRunLogs } from './store.js';
import { MAX_RUN_LOG_LINES } from './log.js';
import { toRun } from './model.js';

export function registerRunStream(env: Pick<Services, 'bus' | 'db'>): void {
  env.bus.source('run', {
    async replay(topic) {
      const id = topic.slice('run:'.length);
      const row = await getRunRow(env.db, id);
      const { items } = await readRunLogs(env.db, id, { limit: MAX_RUN_LOG_LINES + 1 });
      // The same shape as the live lines (lib/jobs/log.ts): each names its app and service.
      const who = row ? { app_id: row.app_id, ...(row.service ? { service: row.service } : {}) } : {};
      const out: BusEvent[] = items.map((l) => ({ topic, ts: l.at, data: { type: 'line', ...who, ...l } }));
      if (row) out.push({ topic, ts: new Date().toISOString(), data: { type: 'run', run: toRun(row) } });
      return out;
    },
  });
}
