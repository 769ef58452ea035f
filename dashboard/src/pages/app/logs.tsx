// Runtime logs of every service, live from the `logs:<appId>` topic (the control plane replays
// the last lines on subscribe, then follows each running container), with a service filter and
// a search; the list is virtualised by LogView.
import { useMemo, useState } from 'preact/hooks';
import * as api from '../../api';
import type { LogLine, RuntimeLogLine } from '../../api';
import { LogView } from '../../logview';
import { ErrorNote, useLoad } from '../../ui';

export function LogsTab({ id }: { id: string }) {
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id]);
  const [service, setService] = useState('');
  const [search, setSearch] = useState('');
  const filter = useMemo(() => {
    const needle = search.trim().toLowerCase();
    if (!service && !needle) return undefined;
    return (l: LogLine) => {
      const r = l as RuntimeLogLine;
      return (!service || r.service === service) && (!needle || r.line.toLowerCase().includes(needle));
    };
  }, [service, search]);
  return (
    <section class="card" aria-labelledby="logs-h">
      <h2 id="logs-h">Runtime logs</h2>
      <ErrorNote error={services.error} />
      <div class="row wrap">
        <label>
          Service
          <select value={service} onChange={(e) => setService((e.target as HTMLSelectElement).value)}>
            <option value="">All services</option>
            {services.data?.map((s) => (
              <option key={s.name} value={s.name}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search
          <input
            type="search"
            value={search}
            onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
          />
        </label>
      </div>
      <LogView
        topic={`logs:${id}`}
        label="Runtime logs"
        filter={filter}
        prefix={(l) => <span class="muted log-service">{(l as RuntimeLogLine).service} </span>}
      />
    </section>
  );
}
