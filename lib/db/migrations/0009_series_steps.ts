import type { Kysely, Migration } from 'kysely';
import { sql } from '../kysely.js';
import { addEncoded, encode, newHistogram } from '../../util/histogram.js';

// The request and vitals rows at the 24 h and 30 d ranges' own steps (5 min, 2 h; see
// lib/series/store.ts), built from the 1 min and 1 h rows already kept, so history written
// before them still shows in those ranges. Histograms add bucket by bucket, as at write time.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    const now = Math.floor(Date.now() / 1000);
    for (const [res, from, keep] of [
      [300, 60, 86_400],
      [7200, 3600, 30 * 86_400],
    ] as const) {
      const rows = await db
        .selectFrom('request_series')
        .selectAll()
        .where('res', '=', from)
        .where('t', '>=', now - keep)
        .execute();
      const merged = new Map<
        string,
        {
          app_id: string;
          service: string;
          t: number;
          requests: number;
          errors_4xx: number;
          errors_5xx: number;
          bytes_out: number;
          hist: Uint32Array;
        }
      >();
      for (const r of rows) {
        const t = Math.floor(r.t / res) * res;
        const key = `${r.app_id}\u0000${r.service}\u0000${t}`;
        let m = merged.get(key);
        if (!m)
          merged.set(
            key,
            (m = {
              app_id: r.app_id,
              service: r.service,
              t,
              requests: 0,
              errors_4xx: 0,
              errors_5xx: 0,
              bytes_out: 0,
              hist: newHistogram(),
            }),
          );
        m.requests += r.requests;
        m.errors_4xx += r.errors_4xx;
        m.errors_5xx += r.errors_5xx;
        m.bytes_out += r.bytes_out;
        addEncoded(m.hist, r.hist);
      }
      const values = [...merged.values()].map((m) => ({ ...m, res, hist: encode(m.hist) }));
      for (let i = 0; i < values.length; i += 500)
        await db
          .insertInto('request_series')
          .values(values.slice(i, i + 500))
          .onConflict((c) => c.doNothing())
          .execute();
      // Literals, not parameters: PostgreSQL types a select list's parameters as text, and matches
      // the grouped expression only when it is written the same way.
      const [r, f] = [sql.lit(res), sql.lit(from)];
      await sql`insert into host_vitals (res, t, samples, cpu_sum, load1_sum, mem_used_sum, mem_total_sum, disk_used_sum, disk_total_sum)
        select ${r}, (t / ${r}) * ${r}, sum(samples), sum(cpu_sum), sum(load1_sum), sum(mem_used_sum), sum(mem_total_sum), sum(disk_used_sum), sum(disk_total_sum)
        from host_vitals where res = ${f} and t >= ${now - keep} group by (t / ${r})
        on conflict do nothing`.execute(db);
    }
  },
};
