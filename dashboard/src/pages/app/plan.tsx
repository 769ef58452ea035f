// The build plan of a git app as GET /build-plan answers it: what a deploy would build from source
// (stack, runtime, the files it rests on, commands, port, warnings, the generated Dockerfile), or
// why there is none (nothing recognisable, or the repository brings its own Dockerfile or compose
// file). Shown before the first deploy and by the Build tab's preview.
import { useEffect, useState } from 'preact/hooks';
import * as api from '../../api';
import type { App, BuildPlan } from '../../api';
import { ErrorNote, useAction } from '../../ui';
import { useCan } from '../../access';

export const STACKS: readonly BuildPlan['stack'][] = ['node', 'python', 'go', 'static', 'php', 'ruby'];

export type PlanResult = { plan: BuildPlan } | { error: unknown };

/** The plan for `ref`, or the API's refusal as a value (a 422 or 409 is an answer here, not a failure). */
export function loadPlan(id: string, ref?: string): Promise<PlanResult> {
  return api.buildPlan(id, ref).then(
    (plan) => ({ plan }),
    (error: unknown) => ({ error }),
  );
}

const orNone = (v: string | null) => (v ? <code>{v}</code> : <span class="muted">none</span>);

export function PlanView({
  result,
  onStack,
}: {
  result: PlanResult;
  onStack?: (stack: BuildPlan['stack']) => Promise<unknown>;
}) {
  if ('error' in result) {
    const e = result.error;
    if (e instanceof api.ApiError && e.code === 'not_detectable')
      return <NotDetectable error={e} onStack={onStack} />;
    if (e instanceof api.ApiError && e.status === 409)
      return (
        <div class="notice" data-testid="plan-own-build">
          <p>
            <strong>The repository brings its own build.</strong> {e.message}.
          </p>
          <p class="muted small">
            It is built as it is: no plan is generated. To have one generated anyway, set the build type to
            auto or stack under Build.
          </p>
        </div>
      );
    return <ErrorNote error={e} />;
  }
  const p = result.plan;
  return (
    <div data-testid="build-plan">
      <dl class="facts">
        <dt>Stack</dt>
        <dd data-testid="plan-stack">{p.stack}</dd>
        <dt>Runtime</dt>
        <dd>
          {p.runtime.name} {p.runtime.version} <span class="mono muted">({p.runtime.image})</span>
        </dd>
        <dt>Detected from</dt>
        <dd class="mono" data-testid="plan-detected-from">
          {p.detected_from.length ? (
            p.detected_from.join(', ')
          ) : (
            <span class="muted">the stack set on the app</span>
          )}
        </dd>
        <dt>Images</dt>
        <dd class="mono">{p.images.join(', ')}</dd>
        <dt>Install</dt>
        <dd>{orNone(p.install)}</dd>
        <dt>Build</dt>
        <dd>{orNone(p.build)}</dd>
        <dt>Start</dt>
        <dd>{orNone(p.start)}</dd>
        <dt>Port</dt>
        <dd data-testid="plan-port">{p.port}</dd>
      </dl>
      {p.warnings.length > 0 && (
        <ul class="plain warning" aria-label="Warnings" data-testid="plan-warnings">
          {p.warnings.map((w) => (
            <li key={w}>Warning: {w}</li>
          ))}
        </ul>
      )}
      <details class="dockerfile">
        <summary>Generated Dockerfile</summary>
        {/* Focusable: a keyboard user can scroll a long one. */}
        <pre class="mono" tabIndex={0} aria-label="Generated Dockerfile" data-testid="plan-dockerfile">
          {p.dockerfile}
        </pre>
      </details>
    </div>
  );
}

function NotDetectable({
  error,
  onStack,
}: {
  error: api.ApiError;
  onStack?: (stack: BuildPlan['stack']) => Promise<unknown>;
}) {
  const looked = error.details?.flatMap((d) => d.looked_for ?? []) ?? [];
  const [stack, setStack] = useState<BuildPlan['stack']>('static');
  const act = useAction();
  return (
    <div class="notice notice-warn" data-testid="plan-not-detectable">
      <p>
        <strong>Nothing recognisable</strong> in the repository: no stack could be detected, so nothing would
        be built.
      </p>
      {looked.length > 0 && (
        <p>
          Looked for: <span class="mono">{looked.join(', ')}</span>
        </p>
      )}
      <p class="muted small">{error.message}</p>
      {onStack ? (
        <>
          <form
            class="row wrap"
            onSubmit={(e) => {
              e.preventDefault();
              void act.run(() => onStack(stack));
            }}
          >
            <label>
              Build it as
              <select
                value={stack}
                onChange={(e) => setStack((e.target as HTMLSelectElement).value as BuildPlan['stack'])}
              >
                {STACKS.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={act.busy}>
              Set this stack
            </button>
          </form>
          <p class="muted small">
            The other settings of a stack (version, commands, port, publish directory) are under Build.
          </p>
        </>
      ) : (
        <p class="muted small">A stack can be set under Build settings (build type: stack).</p>
      )}
      <ErrorNote error={act.error} />
    </div>
  );
}

/**
 * Before the first deploy of a git app: the plan of its branch, then Deploy. Re-read whenever the
 * app's source changes (a stack set here or under Build).
 */
export function FirstDeploy({
  app,
  onSaved,
  onDeploy,
}: {
  app: App;
  onSaved: (a: App) => void;
  onDeploy: () => Promise<unknown>;
}) {
  const src = app.source;
  const key = JSON.stringify(src);
  const [result, setResult] = useState<PlanResult | null>(null);
  const act = useAction();
  const can = useCan();
  useEffect(() => {
    let live = true;
    setResult(null);
    void loadPlan(app.id).then((r) => live && setResult(r));
    return () => void (live = false);
  }, [app.id, key]);
  if (src.type !== 'git') return null;
  const deployable =
    can('app.deploy', app.id) &&
    result &&
    ('plan' in result || (result.error instanceof api.ApiError && result.error.status === 409));
  return (
    <section class="card" aria-labelledby="first-h" data-testid="first-deploy">
      <h2 id="first-h">Before the first deploy</h2>
      <p class="muted">
        What a deploy of <span class="mono">{src.branch}</span> will build. Nothing has been built yet.
      </p>
      {!result && (
        <p class="muted" role="status">
          Reading the repository…
        </p>
      )}
      {result && (
        <PlanView
          result={result}
          onStack={
            !can('app.admin', app.id)
              ? undefined
              : async (stack) => {
                  // A compose path and a stack build are two answers to one question: the stack wins here.
                  const { compose_path: _compose, ...rest } = src;
                  const r = await api.patchApp(app.id, {
                    source: { ...rest, build: { type: 'stack', stack } },
                  });
                  onSaved(r.app);
                }
          }
        />
      )}
      <ErrorNote error={act.error} />
      {deployable && (
        <p>
          <button type="button" class="primary" disabled={act.busy} onClick={() => void act.run(onDeploy)}>
            Deploy {src.branch}
          </button>
        </p>
      )}
    </section>
  );
}
