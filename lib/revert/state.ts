// What an audited change's target looked like: one reader and one applier per kind of target.
// The dispatcher's audit stage reads a route's target before and after the handler runs (the
// route only names the kind and the id), and a revert hands the recorded before-state to the
// same lib functions the routes call, so validation, proxy sync and events happen as they do
// for a request.
//
// Secrets: a state holds a secret as a `Masked` value, never in clear. Its `sealed` envelope is
// the one the owning row already stores (same binding), so the audit table holds nothing the
// master key does not already protect; a revert opens it and hands the real value back to the
// route's function (replaceEnv, updateChannel), which seals it again. `fp` is a keyed digest
// (HMAC under a key derived from the master key): it tells "changed" from "unchanged" without
// opening anything and is worthless to whoever copies the database.
import type { Services } from '../http/handler.js';
import { HttpError } from '../http/errors.js';
import {
  FP_PURPOSE,
  isMasked,
  isStateKind,
  type FieldValue,
  type Masked,
  type State,
  type StateKindName,
} from '../audit/kinds.js';
import { envBinding, replaceEnv } from '../apps/env.js';
import { envRows } from '../apps/env-store.js';
import { getApp, patchServiceSettings, serviceSettings, updateApp } from '../apps/store.js';
import { DEFAULT_DRAIN_S, type AppSource, type BuildLimits } from '../apps/model.js';
import { addTrigger, listTriggers, removeTrigger, updateTrigger } from '../webhooks/store.js';
import {
  addDomain,
  changeDomain,
  instanceDomains,
  putBaseDomain,
  removeCertificate,
  removeDomain,
  uploadCertificate,
} from '../proxy/domains.js';
import { getCertificateRow, getDomainRow, keyBinding } from '../domains/store.js';
import {
  channelBinding,
  channelRow,
  channelSecretBinding,
  createChannel,
  deleteChannel,
  updateChannel,
  type ChannelKind,
} from '../notify/store.js';
import type { NotifyEvent } from '../notify/message.js';
import { readConcurrency } from '../deploy/store.js';
import { createJob, deleteJob, jobState, updateJob, type JobInput } from '../jobs/jobs.js';
import { createRule, deleteRule, ruleSettings, updateRule, type RuleInput } from '../alerts/index.js';
import { findRule } from '../alerts/store.js';
import { createDrain, deleteDrain, updateDrain } from '../drains/index.js';
import { drainHeadersBinding, drainStoredRow, drainUrlBinding } from '../drains/store.js';
import type { DrainKind } from '../drains/kinds/index.js';

export interface StateKind {
  read(env: Services, id: string): Promise<State | null>;
  /**
   * The apps the target belongs to in a state (null: none, an instance setting or a redirect;
   * an empty list: no state). A revert is judged where its target is now and where it goes.
   */
  apps(id: string, state: State | null): Array<string | null>;
  /** Brings the target back to `before`; answers the target's id when it changes (re-created). */
  apply(env: Services, id: string, before: State | null, current: State | null): Promise<string | void>;
}

function mask(env: Services, sealed: string, binding: string, hint?: string): Masked {
  const fp = env.sealer.digest(FP_PURPOSE, env.sealer.open(sealed, binding));
  return hint === undefined
    ? { masked: true, sealed, binding, fp }
    : { masked: true, sealed, binding, fp, hint };
}

const unmask = (env: Services, v: Masked): string => env.sealer.open(v.sealed, v.binding);

/** Not found is a state (absent), every other failure is not. */
async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) return null;
    throw e;
  }
}

/** The target's id is its app's (`<app id>` or `<app id>/<service>`): it never moves. */
const ownApp = (id: string): Array<string | null> => [id.split('/')[0]!];
/** Instance settings and channels belong to no app. */
const noApp = (): Array<string | null> => [null];

const appEnv: StateKind = {
  apps: ownApp,
  async read(env, appId) {
    if (!(await orNull(getApp(env.db, appId)))) return null;
    const rows = await envRows(env.db, appId);
    const out: State = {};
    for (const r of rows) {
      const binding = envBinding(appId, r.key);
      out[r.key] = r.secret === 1 ? mask(env, r.sealed, binding) : env.sealer.open(r.sealed, binding);
    }
    return out;
  },
  async apply(env, appId, before) {
    await getApp(env.db, appId);
    if (before === null) throw notDiffable('The variables of an app that did not exist cannot be restored');
    const items = Object.entries(before).map(([key, v]) =>
      isMasked(v) ? { key, value: unmask(env, v), secret: true } : { key, value: String(v), secret: false },
    );
    await replaceEnv(env.db, env.sealer, appId, items);
  },
};

/** The source, flattened to one row per field, the build limits, the sleep setting and the release command. */
const appSettings: StateKind = {
  apps: ownApp,
  async read(env, appId) {
    const app = await orNull(getApp(env.db, appId));
    if (!app) return null;
    const out: State = {};
    for (const [k, v] of Object.entries(app.source)) out[`source.${k}`] = v as FieldValue;
    out.build_limits = (app.build_limits ?? null) as FieldValue;
    out.sleep_after_minutes = app.sleep_after_minutes;
    out.release_command = app.release_command;
    out.release_timeout_s = app.release_timeout_s;
    return out;
  },
  async apply(env, appId, before) {
    if (before === null) throw notDiffable('An app that did not exist cannot be restored by a revert');
    const source: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(before)) if (k.startsWith('source.')) source[k.slice(7)] = v;
    const limits = (before.build_limits ?? null) as BuildLimits | null;
    // A state recorded before the setting existed has no such field: the setting is left as it is.
    const sleep = Object.hasOwn(before, 'sleep_after_minutes')
      ? ((before.sleep_after_minutes ?? null) as number | null)
      : undefined;
    // The same for the release command and its time limit.
    const release = Object.hasOwn(before, 'release_command')
      ? ((before.release_command ?? null) as string[] | null)
      : undefined;
    const releaseTimeout = Object.hasOwn(before, 'release_timeout_s')
      ? ((before.release_timeout_s ?? null) as number | null)
      : undefined;
    await updateApp(
      env.db,
      appId,
      {
        source: source as AppSource,
        build_limits: limits,
        sleep_after_minutes: sleep,
        release_command: release,
        release_timeout_s: releaseTimeout,
      },
      env.now(),
    );
  },
};

/** id: `<app id>/<service name>`. */
const service: StateKind = {
  apps: ownApp,
  async read(env, id) {
    const [appId, name] = splitService(id);
    if (!(await orNull(getApp(env.db, appId)))) return null;
    const s = (await serviceSettings(env.db, appId)).get(name);
    return {
      port: s?.port ?? null,
      health_path: s?.health_path ?? null,
      drain_s: s?.drain_s ?? DEFAULT_DRAIN_S,
    };
  },
  async apply(env, id, before) {
    const [appId, name] = splitService(id);
    await getApp(env.db, appId);
    await patchServiceSettings(env.db, appId, name, {
      port: (before?.port as number | null) ?? null,
      health_path: (before?.health_path as string | null) ?? null,
      // A state recorded before drain periods existed has none: the default.
      drain_s: (before?.drain_s as number | null | undefined) ?? null,
    });
  },
};

const splitService = (id: string): [string, string] => {
  const at = id.indexOf('/');
  return [id.slice(0, at), id.slice(at + 1)];
};

/**
 * One row per trigger (by id). A revert removes the ones added, adds back the ones removed and puts
 * the changed ones (a paused rule) back as they were, under the same id.
 */
const triggers: StateKind = {
  apps: ownApp,
  async read(env, appId) {
    if (!(await orNull(getApp(env.db, appId)))) return null;
    const out: State = {};
    for (const t of await listTriggers(env.db, appId))
      out[t.id] = { event: t.event, pattern: t.pattern, enabled: t.enabled };
    return out;
  },
  async apply(env, appId, before, current) {
    await getApp(env.db, appId);
    const want = before ?? {};
    const have = current ?? {};
    for (const id of Object.keys(have)) if (!(id in want)) await removeTrigger(env.db, appId, id);
    for (const [id, t] of Object.entries(want)) {
      const v = t as { event: 'push' | 'tag' | 'pull_request'; pattern: string; enabled: boolean };
      if (!(id in have)) await addTrigger(env.db, appId, v, env.now());
      else if (
        (['event', 'pattern', 'enabled'] as const).some(
          (k) => (have[id] as Record<string, unknown>)[k] !== v[k],
        )
      )
        await updateTrigger(env.db, appId, id, { event: v.event, pattern: v.pattern, enabled: v.enabled });
    }
  },
};

/**
 * A domain, with its uploaded certificate when it has one: the chain and its summary in the open,
 * the private key masked (its sealed envelope is the certificate row's). A domain without one has
 * no certificate fields at all, so entries recorded before certificates were part of the state
 * still compare equal.
 */
const domain: StateKind = {
  // A redirect (or an unassigned domain) belongs to no app: outside the list of a limited caller.
  apps: (_id, state) => (state === null ? [] : [(state.app_id as string | null) ?? null]),
  async read(env, id) {
    const d = await orNull(getDomainRow(env.db, id));
    if (!d) return null;
    const state: State = {
      hostname: d.hostname,
      app_id: d.app_id,
      service: d.service,
      port: d.port,
      redirect_to: d.redirect_to,
    };
    const cert = await getCertificateRow(env.db, id);
    if (cert) {
      state.certificate = {
        issuer: cert.issuer,
        not_after: cert.not_after,
        fingerprint256: cert.fingerprint256,
        cert_pem: cert.cert_pem,
      };
      state.certificate_key = mask(env, cert.key_sealed, keyBinding(id));
    }
    return state;
  },
  async apply(env, id, before, current) {
    if (before === null) {
      if (current !== null) await removeDomain(env, id);
      return;
    }
    const input =
      before.redirect_to !== null
        ? { hostname: before.hostname, redirect_to: before.redirect_to }
        : { hostname: before.hostname, app_id: before.app_id, service: before.service, port: before.port };
    let target = id;
    if (current === null) target = (await addDomain(env, input)).domain.id;
    else {
      const patch =
        before.redirect_to !== null
          ? { redirect_to: before.redirect_to }
          : { app_id: before.app_id, service: before.service, port: before.port, redirect_to: null };
      await changeDomain(
        env,
        id,
        before.hostname === current.hostname ? patch : { hostname: before.hostname, ...patch },
      );
    }
    // The certificate goes back through the upload route's function, so it is validated again
    // (an uploaded certificate that expired since is refused, and the revert with it).
    const want = before.certificate_key;
    const have = current?.certificate_key;
    if (isMasked(want)) {
      if (!isMasked(have) || !sameValue(want, have) || !sameValue(before.certificate, current?.certificate)) {
        const chain = (before.certificate as { cert_pem: string }).cert_pem;
        await uploadCertificate(env, target, { cert_pem: chain, key_pem: unmask(env, want) });
      }
    } else if (isMasked(have)) await removeCertificate(env, target);
    return target === id ? undefined : target;
  },
};

const baseDomain: StateKind = {
  apps: noApp,
  async read(env) {
    return { base_domain: (await instanceDomains(env)).base_domain };
  },
  async apply(env, _id, before) {
    await putBaseDomain(env, before?.base_domain ?? null);
  },
};

const deployConcurrency: StateKind = {
  apps: noApp,
  async read(env) {
    return { concurrency: await readConcurrency(env.db) };
  },
  async apply(env, _id, before) {
    await env.deployments.setConcurrency(Number(before?.concurrency));
  },
};

const channel: StateKind = {
  apps: noApp,
  async read(env, id) {
    const r = await channelRow(env.db, id);
    if (!r) return null;
    const state: State = {
      kind: r.kind,
      name: r.name,
      url: mask(env, r.url_sealed, channelBinding(id), r.url_hint),
      events: JSON.parse(r.events) as string[],
      enabled: r.enabled === 1,
    };
    // Only the kinds that have them, so entries recorded before they existed still compare equal.
    if (r.options) state.to = ((JSON.parse(r.options) as { to?: string[] }).to ?? []) as FieldValue;
    if (r.secret_sealed) state.secret = mask(env, r.secret_sealed, channelSecretBinding(id));
    return state;
  },
  async apply(env, id, before, current) {
    const guard = env.notifier.transport;
    if (before === null) {
      if (current !== null) await deleteChannel(env.db, id);
      return;
    }
    const url = isMasked(before.url) ? unmask(env, before.url) : String(before.url);
    const fields = {
      name: String(before.name),
      events: before.events as NotifyEvent[],
      enabled: before.enabled === true,
      ...(Array.isArray(before.to) ? { to: before.to as string[] } : {}),
    };
    if (current === null) {
      // The same signing secret: the receivers that check it keep working.
      const secret = isMasked(before.secret) ? unmask(env, before.secret) : undefined;
      const input = { kind: before.kind as ChannelKind, url, ...fields, ...(secret ? { secret } : {}) };
      return (await createChannel(env.db, env.sealer, guard, input, env.now())).id;
    }
    const sameUrl = isMasked(before.url) && isMasked(current.url) && before.url.fp === current.url.fp;
    await updateChannel(env.db, env.sealer, guard, id, sameUrl ? fields : { ...fields, url }, env.now());
  },
};

/** A job by its id: its settings; a revert puts them back through the job routes' functions. */
const job: StateKind = {
  // A job belongs to its app.
  apps: (_id, state) => (state === null ? [] : [state.app_id as string]),
  async read(env, id) {
    const s = await jobState(env, id);
    return s ? (s as unknown as State) : null;
  },
  async apply(env, id, before, current) {
    const cur = current as (JobInput & { app_id: string }) | null;
    if (before === null) {
      if (cur) await deleteJob(env, cur.app_id, id);
      return;
    }
    const { app_id, ...input } = before as unknown as JobInput & { app_id: string };
    if (cur === null) return (await createJob(env, app_id, input)).id;
    await updateJob(env, app_id, id, input);
  },
};

/** A rule's settings; its state (ok, firing) is the evaluator's and never restored. */
const alertRule: StateKind = {
  // A rule on an app belongs to it; a host rule to none.
  apps: (_id, state) => (state === null ? [] : [(state.app_id as string | null) ?? null]),
  async read(env, id) {
    const r = await findRule(env.db, id);
    return r ? (ruleSettings(r) as State) : null;
  },
  async apply(env, id, before, current) {
    if (before === null) {
      if (current !== null) await deleteRule(env.db, id);
      return;
    }
    const input = before as unknown as RuleInput;
    if (current === null) {
      await createRule(env.db, input, env.now(), id);
      return;
    }
    const { resolved } = await updateRule(env.db, id, input, env.now());
    if (resolved) env.alerts.outbox.kick();
  },
};

/** A drain, its URL and headers masked (their sealed envelopes are the row's own). */
const logDrain: StateKind = {
  // A drain of some apps belongs to each of them; one of every app to none.
  apps: (_id, state) => (state === null ? [] : ((state.app_ids as string[] | null) ?? [null])),
  async read(env, id) {
    const r = await drainStoredRow(env.db, id);
    if (!r) return null;
    return {
      name: r.name,
      kind: r.kind,
      url: mask(env, r.url_sealed, drainUrlBinding(id), r.url_hint),
      app_ids: r.app_ids ? (JSON.parse(r.app_ids) as string[]) : null,
      headers: r.headers_sealed
        ? mask(
            env,
            r.headers_sealed,
            drainHeadersBinding(id),
            (JSON.parse(r.header_names) as string[]).join(', '),
          )
        : null,
      enabled: r.enabled === 1,
    };
  },
  async apply(env, id, before, current) {
    const deps = { db: env.db, sealer: env.sealer, guard: env.drains.transport };
    if (before === null) {
      if (current !== null) await deleteDrain(env.db, id);
    } else {
      const url = isMasked(before.url) ? unmask(env, before.url) : String(before.url);
      const headers = isMasked(before.headers)
        ? (JSON.parse(unmask(env, before.headers)) as Record<string, string>)
        : {};
      const fields = {
        name: String(before.name),
        app_ids: before.app_ids as string[] | null,
        enabled: before.enabled === true,
      };
      if (current === null)
        await createDrain(deps, { ...fields, kind: before.kind as DrainKind, url, headers }, env.now(), id);
      else {
        const sameUrl = sameValue(before.url, current.url);
        const sameHeaders = sameValue(before.headers, current.headers);
        await updateDrain(
          deps,
          id,
          { ...fields, ...(sameUrl ? {} : { url }), ...(sameHeaders ? {} : { headers }) },
          env.now(),
        );
      }
    }
    await env.drains.reload();
  },
};

/** The diffable targets (docs/api.md "Audit diff and revert"), by kind. */
export const STATE_KINDS = {
  app_env: appEnv,
  app: appSettings,
  service,
  triggers,
  domain,
  base_domain: baseDomain,
  deploy_concurrency: deployConcurrency,
  notification_channel: channel,
  job,
  alert_rule: alertRule,
  log_drain: logDrain,
} satisfies Record<StateKindName, StateKind>;

export { isStateKind, type StateKindName };

export function notDiffable(message: string): HttpError {
  return new HttpError('not_diffable', message);
}

/** Values compared as the diff sees them: masked ones by their digest. */
export function sameValue(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  if (isMasked(a) || isMasked(b)) return isMasked(a) && isMasked(b) && a.fp === b.fp;
  return canonical(a) === canonical(b);
}

export function sameState(a: State | null, b: State | null): boolean {
  if (a === null || b === null) return a === b;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if (!(k in a) || !(k in b) || !sameValue(a[k], b[k])) return false;
  return true;
}

function canonical(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    return (
      '{' +
      Object.keys(v)
        .sort()
        .map((k) => JSON.stringify(k) + ':' + canonical((v as Record<string, unknown>)[k]))
        .join(',') +
      '}'
    );
  }
  return JSON.stringify(v);
}
