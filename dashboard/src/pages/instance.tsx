// Instance: versions and health, the base domain (with its DNS check), deploy concurrency, engine
// disk use and prune, the log drains, restart, and the reset that needs `RESET` typed before it
// can be sent.
import { useEffect, useState } from 'preact/hooks';
import * as api from '../api';
import type { DnsCheck } from '../api';
import { bytes } from '../spark';
import { ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';
import { DnsResult } from './domains';
import { DrainsSection } from './drains';
import { InstanceBackupCard } from './instance-backup';
import { useCan } from '../access';

export function InstancePage() {
  useTitle('Instance');
  const info = useLoad(() => api.instanceInfo());
  const can = useCan();
  return (
    <main>
      <h1>Instance</h1>
      <div class="grid">
        <section class="card" aria-labelledby="info-h">
          <h2 id="info-h">Information</h2>
          <ErrorNote error={info.error} />
          {info.data && (
            <dl class="facts" data-testid="instance-info">
              <dt>Version</dt>
              <dd>{info.data.version}</dd>
              <dt>Started</dt>
              <dd>
                <When at={info.data.started_at} />
              </dd>
              <dt>Node.js</dt>
              <dd>{info.data.node_version}</dd>
              <dt>Docker engine</dt>
              <dd>
                {info.data.engine.reachable ? `reachable, ${info.data.engine.version}` : 'not reachable'}
              </dd>
              <dt>Proxy</dt>
              <dd data-testid="instance-proxy">
                {info.data.proxy.reachable ? (
                  `reachable${info.data.proxy.version ? `, ${info.data.proxy.version}` : ''}`
                ) : (
                  <>
                    <span class="warning">not reachable</span>
                    <div class="small muted">
                      Apps run, but no URL reaches them until Caddy runs with its admin API where
                      SVC_CADDY_ADMIN points (the README's "Caddy" section starts one locally).
                    </div>
                  </>
                )}
              </dd>
              <dt>Database</dt>
              <dd>
                {info.data.database.dialect}, {bytes(info.data.database.size_bytes)}
              </dd>
              <dt>Control domain</dt>
              <dd>{info.data.control_domain ?? '—'}</dd>
              <dt>Exposure</dt>
              <dd>{info.data.exposure}</dd>
            </dl>
          )}
        </section>
        <BaseDomain onChange={info.reload} writable={can('instance.owner')} />
        <Concurrency writable={can('instance.admin')} />
        <Disk writable={can('instance.admin')} />
        <InstanceBackupCard writable={can('instance.admin')} />
        <DrainsSection />
        {can('instance.admin') && <Restart />}
        {can('instance.owner') && <Reset />}
      </div>
    </main>
  );
}

function BaseDomain({ onChange, writable }: { onChange: () => Promise<void>; writable: boolean }) {
  const [value, setValue] = useState('');
  const [current, setCurrent] = useState<string | null>(null);
  const [dns, setDns] = useState<DnsCheck | null>(null);
  const act = useAction();
  useEffect(() => {
    void act.run(async () => {
      const r = await api.getBaseDomain();
      setCurrent(r.base_domain);
      setValue(r.base_domain ?? '');
    });
  }, []);
  const check = async (base: string) => setDns(await api.dnsCheck(`svc.${base}`));
  return (
    <section class="card" aria-labelledby="base-h">
      <h2 id="base-h">Base domain</h2>
      <p class="muted small">
        Every app gets an automatic host under it; point a wildcard DNS record at this host.
      </p>
      <p>
        Current: <strong data-testid="base-domain">{current ?? 'none'}</strong>
      </p>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          if (!writable) return;
          setDns(null);
          void act.run(async () => {
            const v = value.trim() || null;
            const r = await api.putBaseDomain(v);
            setCurrent(r.base_domain);
            await onChange();
            if (r.base_domain) await check(r.base_domain);
          });
        }}
      >
        {writable && (
          <label>
            Base domain
            <input
              name="base-domain"
              value={value}
              placeholder="apps.example.com"
              onInput={(e) => setValue((e.target as HTMLInputElement).value)}
            />
          </label>
        )}
        {writable && (
          <button type="submit" class="primary" disabled={act.busy}>
            Save
          </button>
        )}
        {current && (
          <button type="button" disabled={act.busy} onClick={() => act.run(() => check(current))}>
            Check DNS
          </button>
        )}
      </form>
      <ErrorNote error={act.error} />
      {dns && <DnsResult r={dns} />}
    </section>
  );
}

function Concurrency({ writable }: { writable: boolean }) {
  const [n, setN] = useState<number | null>(null);
  const [saved, setSaved] = useState(false);
  const act = useAction();
  useEffect(() => void act.run(async () => setN((await api.getConcurrency()).concurrency)), []);
  if (!writable)
    return (
      <section class="card" aria-labelledby="conc-h">
        <h2 id="conc-h">Deploy concurrency</h2>
        <p>
          {n ?? '…'} app{n === 1 ? '' : 's'} may deploy at once.
        </p>
      </section>
    );
  return (
    <section class="card" aria-labelledby="conc-h">
      <h2 id="conc-h">Deploy concurrency</h2>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void act.run(async () => {
            setN((await api.putConcurrency(n ?? 1)).concurrency);
            setSaved(true);
          });
        }}
      >
        <label>
          Apps deploying at once
          <input
            name="concurrency"
            type="number"
            min={1}
            max={8}
            required
            value={n ?? ''}
            onInput={(e) => setN(Number((e.target as HTMLInputElement).value))}
          />
        </label>
        <button type="submit" disabled={act.busy || n === null}>
          Save
        </button>
        {saved && (
          <span role="status" class="muted">
            Saved.
          </span>
        )}
      </form>
      <ErrorNote error={act.error} />
    </section>
  );
}

function Disk({ writable }: { writable: boolean }) {
  const disk = useLoad(() => api.diskUsage());
  const [pruned, setPruned] = useState<number | null>(null);
  const act = useAction();
  const kinds = [
    ['Images', 'images'],
    ['Containers', 'containers'],
    ['Volumes', 'volumes'],
    ['Build cache', 'build_cache'],
  ] as const;
  return (
    <section class="card" aria-labelledby="disk-h">
      <h2 id="disk-h">Engine disk use</h2>
      <ErrorNote error={disk.error} />
      {disk.data && (
        <table data-testid="disk">
          <thead>
            <tr>
              <th>Kind</th>
              <th>Count</th>
              <th>Size</th>
              <th>Reclaimable</th>
            </tr>
          </thead>
          <tbody>
            {kinds.map(([label, k]) => (
              <tr key={k}>
                <td>{label}</td>
                <td>{disk.data![k].count}</td>
                <td>{bytes(disk.data![k].size_bytes)}</td>
                <td>{bytes(disk.data![k].reclaimable_bytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {writable && (
        <>
          <p class="muted small">
            Prune removes dangling images, stopped containers no app owns and build cache; never an app's
            images or volumes.
          </p>
          <button
            type="button"
            disabled={act.busy}
            onClick={() =>
              act.run(async () => {
                setPruned((await api.prune()).reclaimed_bytes);
                await disk.reload();
              })
            }
          >
            Prune
          </button>
        </>
      )}
      {pruned !== null && <p role="status">Reclaimed {bytes(pruned)}.</p>}
      <ErrorNote error={act.error} />
    </section>
  );
}

function Restart() {
  const [sent, setSent] = useState(false);
  const act = useAction();
  return (
    <section class="card" aria-labelledby="restart-h">
      <h2 id="restart-h">Restart</h2>
      <p class="muted small">In-flight requests finish; running deployments resume after the restart.</p>
      <button
        type="button"
        disabled={act.busy || sent}
        onClick={() =>
          confirm('Restart the control plane now?') &&
          act.run(async () => {
            await api.restartInstance();
            setSent(true);
          })
        }
      >
        Restart the control plane
      </button>
      {sent && <p role="status">Restarting; the page reconnects by itself.</p>}
      <ErrorNote error={act.error} />
    </section>
  );
}

function Reset() {
  const [typed, setTyped] = useState('');
  const [result, setResult] = useState<{
    removed: Array<{ name: string }>;
    failed: Array<{ name: string }>;
  } | null>(null);
  const act = useAction();
  const armed = typed === 'RESET';
  return (
    <section class="card danger-zone" aria-labelledby="reset-h">
      <h2 id="reset-h">Reset</h2>
      <p>
        Removes every app with its containers, networks, volumes, images, domains, databases and backup
        settings. Operators, tokens, audit and instance settings stay.
      </p>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          if (armed)
            void act.run(async () => {
              setResult(await api.resetInstance());
              setTyped('');
            });
        }}
      >
        <label>
          Type RESET to confirm
          <input
            name="reset-confirm"
            autoComplete="off"
            value={typed}
            onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="danger" disabled={!armed || act.busy}>
          Reset the instance
        </button>
      </form>
      <ErrorNote error={act.error} />
      {result && (
        <p role="status" data-testid="reset-result">
          Removed {result.removed.length} app{result.removed.length === 1 ? '' : 's'}
          {result.failed.length
            ? `; ${result.failed.length} failed: ${result.failed.map((f) => f.name).join(', ')}`
            : ''}
          .
        </p>
      )}
    </section>
  );
}
