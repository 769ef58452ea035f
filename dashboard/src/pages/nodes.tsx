// Nodes (cluster mode): the swarm's hosts with their state and load, drain and activate, and the
// join command for a new host (shown once after a step-up; it carries the worker token).
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { ClusterNode, NodeJoinCommand } from '../api';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';
import { useCan } from '../access';

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

function JoinCommand({ join, onDone }: { join: NodeJoinCommand; onDone: () => void }) {
  return (
    <div class="notice" role="status" data-testid="join-command">
      <p>
        Run this as root on a new Debian host with the <code>docker.io</code> package installed. It works
        until <When at={join.expires_at} />; after that the token is rotated and it no longer joins.
      </p>
      <code class="secret" data-testid="join-command-line">
        {join.command}
      </code>
      <div class="row">
        <button type="button" onClick={() => void navigator.clipboard?.writeText(join.command)}>
          Copy
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

export function NodesPage() {
  useTitle('Nodes');
  const info = useLoad(() => api.instanceInfo());
  if (info.data && info.data.cluster.mode !== 'swarm')
    return (
      <main>
        <h1>Nodes</h1>
        <section class="card" data-testid="nodes-single-host">
          <p>
            This instance runs its apps on this one host, so there are no nodes to list or join. Growing to
            several hosts means cluster mode (<code>SVC_CLUSTER=swarm</code>): the manual's "Beyond one host"
            (docs/cluster.md) says how, and what changes.
          </p>
        </section>
      </main>
    );
  return <ClusterNodes />;
}

function ClusterNodes() {
  const nodes = useLoad(() => api.listNodes().then((r) => r.items));
  const can = useCan();
  const [join, setJoin] = useState<NodeJoinCommand | null>(null);
  const act = useAction();
  const setAvailability = (n: ClusterNode, availability: ClusterNode['availability']) =>
    void act.run(async () => {
      if (availability === 'drain' && !confirm(`Drain ${n.hostname}? Its tasks move to other nodes.`)) return;
      await api.patchNode(n.id, { availability });
      await nodes.reload();
    });
  return (
    <main>
      <h1>Nodes</h1>
      {can('instance.admin') && (
        <section class="card" aria-labelledby="join-h">
          <h2 id="join-h">Join a node</h2>
          <p class="muted">A one-line command that makes a new host a worker of this swarm.</p>
          <button
            type="button"
            disabled={act.busy}
            onClick={() =>
              void act.run(async () => {
                setJoin(await api.joinCommand());
              })
            }
          >
            Join a node
          </button>
          {join && <JoinCommand join={join} onDone={() => setJoin(null)} />}
        </section>
      )}
      <section class="card" aria-labelledby="nodes-h">
        <h2 id="nodes-h">Nodes</h2>
        <ErrorNote error={nodes.error ?? act.error} />
        {nodes.data && (
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Hostname</th>
                <th>Role</th>
                <th>Status</th>
                <th>Availability</th>
                <th>Address</th>
                <th>Resources</th>
                <th>Tasks</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {nodes.data.map((n) => (
                <tr key={n.id} data-testid={`node-${n.hostname}`}>
                  <td>{n.hostname}</td>
                  <td>{n.role}</td>
                  <td>
                    <Badge status={n.status} />
                  </td>
                  <td data-testid="availability">{n.availability}</td>
                  <td>{n.addr ?? '—'}</td>
                  <td>
                    {n.cpus} CPU, {gib(n.memory_bytes)}
                  </td>
                  <td>{n.tasks}</td>
                  <td>
                    {!can('instance.admin') ? null : n.availability === 'active' ? (
                      <button type="button" disabled={act.busy} onClick={() => setAvailability(n, 'drain')}>
                        Drain
                      </button>
                    ) : (
                      <button type="button" disabled={act.busy} onClick={() => setAvailability(n, 'active')}>
                        Activate
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
