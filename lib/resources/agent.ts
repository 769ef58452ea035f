// Cluster mode: the engine of the manager cannot read the containers of other nodes, so a small
// global Swarm service, the stats agent, runs one task on every node. It reads the cgroup files
// of the node's containers (cgroup v1 or v2, mounted read-only) every interval and prints one line
// per container: `svcstat <container id> <cpu ns> <memory bytes> <inactive file bytes> <limit>`.
// The manager gathers the agent's logs from every node (as it does an app's), so the control
// plane reads them here with no other way in; lines name containers only, never their contents.
import type { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import type { Engine } from '../docker/engine.js';
import { guard } from '../docker/engine.js';
import { LABEL_ROLE } from '../docker/names.js';
import { ownerLabels, isOwned } from '../docker/owner.js';
import { lineSplitter } from '../docker/log-lines.js';
import type { Logger } from '../log.js';

/** The image the agent runs (a busybox shell and its applets); SVC_IMAGE_MAP may map it. */
export const AGENT_IMAGE = 'busybox:1.36';
export const AGENT_ROLE = 'stats-agent';
const LABEL_SPEC = 'svc.agent.spec';

// One line per container cgroup found (64 hex characters, `docker-<id>.scope` under systemd).
const SCRIPT = `i="$SVC_INTERVAL"
emit() { case "$1" in *[!0-9a-f]*|'') return;; esac; [ \${#1} -eq 64 ] && echo "svcstat $1 $2 $3 $4 $5"; }
id() { n="\${1%/}"; n="\${n##*/}"; n="\${n#docker-}"; echo "\${n%.scope}"; }
while :; do
  if [ -f /cg/cgroup.controllers ]; then
    for d in /cg/*/ /cg/*/*/ /cg/*/*/*/; do
      [ -f "$d/cpu.stat" ] || continue
      u=$(sed -n 's/^usage_usec //p' "$d/cpu.stat")
      emit "$(id "$d")" "\${u}000" "$(cat "$d/memory.current" 2>/dev/null)" "$(sed -n 's/^inactive_file //p' "$d/memory.stat" 2>/dev/null)" "$(cat "$d/memory.max" 2>/dev/null)"
    done
  else
    for d in /cg/cpuacct/*/ /cg/cpuacct/*/*/ /cg/cpuacct/*/*/*/; do
      [ -f "$d/cpuacct.usage" ] || continue
      m="/cg/memory/\${d#/cg/cpuacct/}"
      emit "$(id "$d")" "$(cat "$d/cpuacct.usage")" "$(cat "$m/memory.usage_in_bytes" 2>/dev/null)" "$(sed -n 's/^total_inactive_file //p' "$m/memory.stat" 2>/dev/null)" "$(cat "$m/memory.limit_in_bytes" 2>/dev/null)"
    done
  fi
  sleep "$i"
done`;

export interface AgentReading {
  cpuNs: number;
  memoryBytes: number;
  /** null: no limit. */
  limitBytes: number | null;
  /** Epoch ms of the agent's reading (the log line's time). */
  at: number;
}

/** Parses one agent line (with docker's timestamp in front); null for anything else. */
export function parseAgentLine(raw: string): [string, AgentReading] | null {
  const m = /^(\S+) (?:\S+=\S* )?svcstat ([0-9a-f]{64}) (\d+) (\d*) (\d*) (\S*)$/.exec(raw);
  if (!m) return null;
  const at = Date.parse(m[1]!);
  const limit = Number(m[6]);
  return [
    m[2]!,
    {
      cpuNs: Number(m[3]),
      memoryBytes: Math.max(0, Number(m[4] || 0) - Number(m[5] || 0)),
      // cgroup v1 reports no limit as a huge number, v2 as "max".
      limitBytes: Number.isFinite(limit) && limit > 0 && limit < 2 ** 60 ? limit : null,
      at: Number.isNaN(at) ? Date.now() : at,
    },
  ];
}

export function agentSpec(engine: Engine, image: string, intervalSeconds: number) {
  const spec = {
    Name: `svc-stats-${engine.owner.instanceId.slice(0, 12)}`,
    Labels: { ...ownerLabels(engine), [LABEL_ROLE]: AGENT_ROLE } as Record<string, string>,
    TaskTemplate: {
      ContainerSpec: {
        Image: image,
        Command: ['sh', '-c', SCRIPT],
        Env: [`SVC_INTERVAL=${intervalSeconds}`],
        Mounts: [{ Type: 'bind', Source: '/sys/fs/cgroup', Target: '/cg', ReadOnly: true }],
        ReadOnly: true,
      },
      Resources: { Limits: { NanoCPUs: 100_000_000, MemoryBytes: 32 * 1024 * 1024 } },
      RestartPolicy: { Condition: 'any', Delay: 5_000_000_000 },
    },
    Mode: { Global: {} },
  };
  const hash = createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
  spec.Labels[LABEL_SPEC] = hash;
  return { spec, hash };
}

interface ServiceInfo {
  ID: string;
  Version: { Index: number };
  Spec: { Name: string; Labels?: Record<string, string> };
}

/** Creates the agent's service, or replaces a spec that changed; answers its id. */
export async function ensureAgent(engine: Engine, image: string, intervalSeconds: number): Promise<string> {
  const { spec, hash } = agentSpec(engine, image, intervalSeconds);
  return guard(engine, async () => {
    const d = engine.docker;
    const found = ((await d.listServices({ filters: { name: [spec.Name] } })) as ServiceInfo[]).find(
      (s) => s.Spec.Name === spec.Name,
    );
    if (found) {
      const labels = found.Spec.Labels ?? {};
      if (
        !isOwned(engine, 'container', `swarm-service:${found.ID}`, labels) ||
        labels[LABEL_ROLE] !== AGENT_ROLE
      )
        throw new Error(`a service named ${spec.Name} exists and is not this instance's stats agent`);
      if (labels[LABEL_SPEC] === hash) return found.ID;
      await d.getService(found.ID).update({ version: found.Version.Index, ...spec } as never);
      return found.ID;
    }
    const made = (await d.createService(spec as never)) as { id?: string; ID?: string };
    return made.id ?? made.ID ?? '';
  });
}

/** The agent's readings by container id, kept current from its logs. */
export class AgentReadings {
  private readonly latest = new Map<string, AgentReading>();
  private stream: Readable | null = null;
  private serviceId: string | null = null;
  private lastTry = 0;

  constructor(
    private readonly deps: {
      engine: Engine;
      image: string;
      intervalSeconds: number;
      log?: Logger;
      now: () => number;
    },
  ) {}

  /** The newest reading of a container, when it is recent (three intervals). */
  get(containerId: string): AgentReading | null {
    const r = this.latest.get(containerId);
    return r && this.deps.now() - r.at <= 3 * this.deps.intervalSeconds * 1000 + 5000 ? r : null;
  }

  /** Makes sure the agent runs and its logs are followed (tried again a minute after a failure). */
  async ensure(): Promise<void> {
    if (this.stream && !this.stream.destroyed) return;
    if (this.deps.now() - this.lastTry < 60_000) return;
    this.lastTry = this.deps.now();
    try {
      this.serviceId = await ensureAgent(this.deps.engine, this.deps.image, this.deps.intervalSeconds);
      await this.follow(this.serviceId);
      this.lastTry = 0;
    } catch (err) {
      this.deps.log?.warn({ err: String(err) }, 'the stats agent could not be started; retried in a minute');
    }
  }

  private async follow(id: string): Promise<void> {
    const raw = (await this.deps.engine.docker.getService(id).logs({
      follow: true,
      stdout: true,
      stderr: false,
      timestamps: true,
      since: Math.floor(this.deps.now() / 1000) - 60,
    } as never)) as unknown as Readable;
    this.stream = raw;
    const sink = lineSplitter((l) => {
      const p = parseAgentLine(l);
      if (!p) return;
      this.latest.set(p[0], p[1]);
      if (this.latest.size > 10_000) this.latest.delete(this.latest.keys().next().value!);
    });
    this.deps.engine.docker.modem.demuxStream(raw, sink, sink);
    const gone = () => {
      if (this.stream === raw) this.stream = null;
    };
    raw.on('end', gone);
    raw.on('close', gone);
    raw.on('error', gone);
  }

  stop(): void {
    this.stream?.destroy();
    this.stream = null;
  }
}
