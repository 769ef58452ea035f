// A deployment's build log as a person follows it: each line with its time, how long the
// deployment has taken, the step it is at ("step 3 of 5: RUN npm ci"), and none of the steps the
// control plane adds for itself (the engine's `LABEL svc.*` step and its output).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Deployment, LogLine } from './api';
import { TERMINAL } from './api';
import { LogView } from './logview';
import { useTopic } from './ws';

const STEP = /^Step (\d+)\/(\d+) : (.*)$/;
const OWN_STEP = /^Step \d+\/\d+ : LABEL svc\./;
/** Output that belongs to no step (the lines after the last one). */
const AFTER_STEPS = /^(Successfully|Step \d+\/\d+ :)/;

export interface BuildSteps {
  /** Seqs of the lines of the control plane's own steps. */
  hidden: Set<number>;
  /** How many own steps were seen (they are taken off every "Step n/m"). */
  own: number;
  current: { n: number; of: number; what: string } | null;
}

export function emptySteps(): BuildSteps {
  return { hidden: new Set(), own: 0, current: null };
}

/** Folds one line (in log order) into what is known of the steps. */
export function foldStep(st: BuildSteps, l: LogLine, hiding: { on: boolean }): void {
  if (l.stream !== 'build') return;
  if (OWN_STEP.test(l.line)) {
    st.hidden.add(l.seq);
    st.own++;
    hiding.on = true;
    return;
  }
  if (hiding.on && !AFTER_STEPS.test(l.line)) {
    st.hidden.add(l.seq);
    return;
  }
  hiding.on = false;
  const m = STEP.exec(l.line);
  if (m) st.current = { n: Number(m[1]), of: Number(m[2]), what: m[3]! };
}

/** "Step 6/7 : RUN x" with one own step -> "Step 6/6 : RUN x". */
export function stepText(line: string, own: number): string {
  if (!own) return line;
  return line.replace(
    STEP,
    (_all, n, of, rest) => `Step ${n}/${Math.max(Number(n), Number(of) - own)} : ${rest}`,
  );
}

export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${s % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

const clock = (at: string) =>
  new Date(at).toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hour12: false,
  });

const PHASE: Record<string, string> = {
  queued: 'Queued',
  cloning: 'Cloning the repository',
  building: 'Building',
  deploying: 'Starting the new containers',
  health_checking: 'Waiting for the health check',
};

export function BuildLog({ id, deployment }: { id: string; deployment: Deployment | null }) {
  const steps = useRef<BuildSteps>(emptySteps());
  const hiding = useRef({ on: false });
  const seen = useRef(0);
  const first = useRef<string | null>(null);
  const [, setTick] = useState(0);
  useEffect(() => {
    steps.current = emptySteps();
    hiding.current = { on: false };
    seen.current = 0;
    first.current = null;
  }, [id]);
  useTopic(`build:${id}`, (d: any) => {
    const batch: LogLine[] = Array.isArray(d?.items) ? d.items : [d];
    for (const l of batch) {
      if (typeof l?.seq !== 'number' || l.seq <= seen.current) continue;
      seen.current = l.seq;
      first.current ??= l.at;
      foldStep(steps.current, l, hiding.current);
    }
    setTick((n) => n + 1);
  });
  const done = deployment ? TERMINAL.includes(deployment.status) : false;
  // While it runs, the elapsed time moves every second.
  useEffect(() => {
    if (done) return;
    const t = setInterval(() => setTick((n) => n + 1), 1_000);
    return () => clearInterval(t);
  }, [done, id]);
  const start = deployment?.started_at ?? first.current ?? deployment?.created_at ?? null;
  const end = done ? (deployment?.finished_at ?? null) : null;
  const elapsed = start ? duration((end ? Date.parse(end) : Date.now()) - Date.parse(start)) : null;
  const cur = steps.current.current;
  const of = cur ? Math.max(cur.n, cur.of - steps.current.own) : 0;
  return (
    <>
      <p class="small" role="status" data-testid="build-progress">
        {done ? (
          <>
            Finished{elapsed ? ` in ${elapsed}` : ''} ({deployment!.status.replace(/_/g, ' ')}).
          </>
        ) : (
          <>
            {PHASE[deployment?.status ?? 'queued'] ?? 'Working'}
            {cur && deployment?.status === 'building' && (
              <>
                : step {cur.n} of {of}, <span class="mono">{cur.what}</span>
              </>
            )}
            {elapsed && <span class="muted"> · {elapsed} so far</span>}
          </>
        )}
      </p>
      <LogView
        topic={`build:${id}`}
        label="Build log"
        filter={(l) => !steps.current.hidden.has(l.seq)}
        prefix={(l) => (
          <span class="log-time" aria-hidden="true">
            {clock(l.at)}{' '}
          </span>
        )}
        format={(l) => (l.stream === 'build' ? stepText(l.line, steps.current.own) : l.line)}
      />
    </>
  );
}
