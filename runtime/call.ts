// Stages `state`, `call` and `audit`: the declared target's state before the change, the handler
// with its ctx (its errors answered here, so that a refused change is audited too), and one audit
// row for every route that declares an action and every authenticated write.
import type { AuditNote, Client, Ctx, Principal, Services } from '#lib/http/handler.js';
import type { AuditSpec, AuditStateRef, RouteHandler } from '#lib/http/route.js';
import { permit } from '#lib/auth/access.js';
import { recordAudit, routeAction, type AuditEntryInput } from '#lib/audit/index.js';
import { attempt, isPromise } from '#lib/util/maybe.js';
import { failure, type Exchange, type StageResult, type StateBefore } from './pipeline.js';
import { isWrite, requireStepUp } from './stages.js';

// The readers reach into most product areas: loaded by the first audited change that declares a state, not at boot.
const stateKinds = () => import('#lib/revert/state.js').then((m) => m.STATE_KINDS);

/** Stage `state`: the declared target's state before the change; only routes that declare one pay for it. */
export function state(x: Exchange): StageResult {
  const ref = x.spec.audit?.state;
  if (!ref) return;
  x.ctx = contextFor(x);
  return readBefore(x, ref).then((before) => {
    x.before = before;
  });
}

function readBefore(x: Exchange, ref: NonNullable<AuditSpec['state']>): Promise<StateBefore | null> {
  const { env } = x.site;
  const ctx = x.ctx;
  const resolve = async (): Promise<AuditStateRef | null> => {
    if (typeof ref === 'function') return ref(ctx);
    return { kind: ref.kind, id: ref.id ? (safeTarget(ref.id, ctx) ?? null) : null };
  };
  const read = async (r: AuditStateRef | null): Promise<StateBefore | null> => {
    if (r === null) return null;
    const kinds = await stateKinds();
    return { kind: r.kind, id: r.id, before: r.id === null ? null : await kinds[r.kind].read(env, r.id) };
  };
  return resolve()
    .then(read)
    .catch((err) => {
      env.log.error({ err, requestId: x.requestId }, 'audit state read failed');
      return null;
    });
}

/** Stage `call`: the handler, with the ctx of this request; a thrown error becomes its answer. */
export function call(x: Exchange): StageResult {
  const ctx = (x.ctx ??= contextFor(x));
  const handler = x.handler;
  const response = attempt(
    () => handler(x.request!, ctx),
    (e) => failure(x.site.env, e, x.requestId),
  );
  if (!isPromise(response)) {
    x.response = response;
    return;
  }
  return response.then((r) => {
    x.response = r;
  });
}

function contextFor(x: Exchange): Ctx & { reply?: RouteHandler['reply'] } {
  return new HandlerCtx(x);
}

/**
 * A handler's ctx. What few handlers use (the client, the helpers) is made when read; the helpers
 * stay callable when destructured (`{ audit, requireStepUp }`).
 */
class HandlerCtx implements Ctx {
  readonly params: Record<string, string>;
  readonly query: Record<string, unknown>;
  readonly body: unknown;
  readonly env: Services;
  readonly principal: Principal | null;
  readonly routeSpec: Ctx['routeSpec'];
  readonly reply: RouteHandler['reply'];
  readonly #x: Exchange;

  constructor(x: Exchange) {
    const { input, site } = x;
    this.params = input.params as Record<string, string>;
    this.query = input.query as Record<string, unknown>;
    this.body = input.body;
    this.env = site.env;
    this.principal = x.principal;
    this.routeSpec = site.routeSpec;
    this.reply = x.handler.reply;
    this.#x = x;
  }

  get client(): Client {
    return this.#x.client;
  }
  get requestId(): string {
    return this.#x.requestId;
  }
  get waitUntil(): Ctx['waitUntil'] {
    const env = this.env;
    const { meta, requestId } = this.#x;
    return (p) => {
      const guarded = p.catch((err) => env.log.error({ err, requestId }, 'background task failed'));
      // The work runs either way; a host that can wait for it (graceful shutdown) is told.
      meta.waitUntil?.(guarded);
    };
  }
  get audit(): Ctx['audit'] {
    const x = this.#x;
    return (n) => {
      x.note = { ...x.note, ...n };
    };
  }
  get requireStepUp(): Ctx['requireStepUp'] {
    const { env, principal } = this;
    return () => requireStepUp(env, principal);
  }
  get permit(): Ctx['permit'] {
    const principal = this.principal;
    return (permission, appId) => {
      if (principal) permit(principal, permission, appId);
    };
  }
}

/**
 * Stage `audit`: one row for every route that declares an audit action, and for every
 * authenticated write, named by its `<METHOD> <pattern>` (the declared action is its finer event).
 * The handler may refine the entry through ctx.audit; it never writes one itself.
 */
export function audit(x: Exchange): StageResult {
  const { note, before, response } = x;
  if (note?.skip) return;
  if (!x.spec.audit && !(x.principal && isWrite(x))) return;
  if (before !== null && ok(response)) return readAfter(x, before, note).then((s) => write(x, s));
  return write(x, null);
}

/** The state the change produced, under the id the handler named when it made one. */
async function readAfter(
  x: Exchange,
  b: StateBefore,
  note: AuditNote | undefined,
): Promise<AuditEntryInput['state']> {
  const id = note?.stateId ?? b.id ?? note?.target ?? null;
  if (id === null) return null;
  try {
    return {
      kind: b.kind,
      id,
      before: b.before,
      after: await (await stateKinds())[b.kind].read(x.site.env, id),
    };
  } catch (err) {
    x.site.env.log.error({ err, requestId: x.requestId }, 'audit state read failed');
    return null;
  }
}

function write(x: Exchange, state: AuditEntryInput['state']): Promise<void> {
  const { note, response, ctx } = x;
  const entry = auditEntry(x, state);
  return recordAudit(x.site.env.db, entry).then(
    (id) => {
      if (note?.answer && ok(response)) x.response = note.answer(String(id));
    },
    (err) => x.site.env.log.error({ err, requestId: ctx.requestId }, 'audit write failed'),
  );
}

function auditEntry(x: Exchange, state: AuditEntryInput['state']): AuditEntryInput {
  const { note, spec, principal, ctx, response } = x;
  const declared = spec.audit;
  const actor = principal ? principal.user : note?.actor;
  let target: string | null | undefined = note?.target;
  if (target === undefined && declared?.target) target = safeTarget(declared.target, ctx);
  if (target === undefined) target = x.rawParams.id ?? Object.values(x.rawParams)[0] ?? null;
  const actorType = principal
    ? principal.kind === 'token'
      ? 'token'
      : 'user'
    : actor || note?.claimed !== undefined
      ? 'user'
      : 'system';
  return {
    route: routeAction(x.effective, x.route.pattern),
    actorType,
    actorId: actor?.id ?? null,
    actor: actor?.username ?? note?.claimed ?? null,
    tokenId: principal?.kind === 'token' ? principal.credentialId : null,
    via: note?.via ?? principal?.kind ?? null,
    event: note?.action ?? declared?.action ?? null,
    summary: spec.summary,
    target,
    ip: ctx.client.ip,
    outcome: response.status,
    detail: note?.detail ?? null,
    state,
    revertOf: ok(response) ? (note?.revertOf ?? null) : null,
    appId: note?.appId !== undefined ? note.appId : (x.appId ?? undefined),
  };
}

const ok = (r: Response) => r.status >= 200 && r.status < 300;

function safeTarget(fn: (ctx: Ctx) => string | null | undefined, ctx: Ctx): string | null | undefined {
  try {
    return fn(ctx);
  } catch {
    return undefined;
  }
}
