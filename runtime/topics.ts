// The WebSocket topics, one entry per kind: a topic is `<kind>` or `<kind>:<id>`. Adding one is
// adding its entry here (and publishing on the bus, with a source there if it replays history):
//   jobs: fleet,                                   // every app's events, filtered per subscriber
//   run: ofResource('run', runExists, runApp),     // `run:<runId>`, read with its app's access
// where runExists and runApp are the run store's lookups (is there such a run; whose app is it).
import type { Db } from '#lib/db/index.js';
import type { Principal } from '#lib/http/handler.js';
import { HttpError } from '#lib/http/errors.js';
import { permit } from '#lib/auth/access.js';
import { deploymentTopicApp, type TopicGrant } from '#lib/auth/topics.js';
import { appExists, deploymentExists } from '#lib/events/topics.js';
import { runApp, runExists } from '#lib/jobs/store.js';

export interface TopicKind {
  /**
   * A topic of one resource (`<kind>:<id>`): what it is called (`no <noun> with id "<id>"` answers
   * a missing one, and one out of the caller's reach alike), and whether it exists.
   */
  resource?: { noun: string; exists: (db: Db, id: string) => Promise<boolean> };
  /** The permission a subscriber needs and the app the topic is about (null: none). */
  grant: (db: Db, id: string) => TopicGrant | Promise<TopicGrant>;
}

/** Every app's events (each subscriber gets those of the apps it reaches): `app.read`. */
const fleet: TopicKind = { grant: () => ({ permission: 'app.read', appId: null }) };
/** The instance's own: `instance.read`. */
const instance: TopicKind = { grant: () => ({ permission: 'instance.read', appId: null }) };

/** One resource's topic, read with the access of the app `appOf` names for it. */
function ofResource(
  noun: string,
  exists: (db: Db, id: string) => Promise<boolean>,
  appOf: (db: Db, id: string) => string | null | Promise<string | null>,
): TopicKind {
  return {
    resource: { noun, exists },
    grant: async (db, id) => ({ permission: 'app.read', appId: await appOf(db, id) }),
  };
}

const ofApp = ofResource('app', appExists, (_db, id) => id);

export const TOPICS: Readonly<Record<string, TopicKind>> = {
  deployments: fleet,
  apps: fleet,
  backups: fleet,
  host: instance,
  security: instance,
  // Alert rules firing and resolving (the alerts area publishes them).
  alerts: instance,
  logs: ofApp,
  stats: ofApp,
  build: ofResource('deployment', deploymentExists, deploymentTopicApp),
  // Jobs' runs starting and ending, and job_failed (lib/jobs/runner.ts).
  jobs: fleet,
  // One run's status and output lines (`run:<runId>`), read with its app's access.
  run: ofResource('run', runExists, runApp),
};

const ID = /^[0-9a-z]{1,64}$/;

export interface Topic {
  name: string;
  kind: TopicKind;
  id: string;
}

/** The topic a client named, or null when no entry declares it (or its id is malformed). */
export function parseTopic(topic: unknown): Topic | null {
  if (typeof topic !== 'string') return null;
  const at = topic.indexOf(':');
  const name = at < 0 ? topic : topic.slice(0, at);
  const kind = Object.hasOwn(TOPICS, name) ? TOPICS[name]! : undefined;
  if (kind === undefined) return null;
  const id = at < 0 ? '' : topic.slice(at + 1);
  if (kind.resource ? !ID.test(id) : at >= 0) return null;
  return { name, kind, id };
}

/**
 * What a subscription to `topic` is granted on; throws 403 forbidden, or 404 not_found for a
 * resource that is missing or outside the caller's apps (the same answer: neither is revealed).
 */
export async function authoriseTopic(
  db: Db,
  principal: Pick<Principal, 'permissions' | 'appIds'>,
  topic: Topic,
): Promise<TopicGrant> {
  const { kind, id } = topic;
  const grant = await kind.grant(db, id);
  try {
    permit(principal, grant.permission, grant.appId);
  } catch (err) {
    if (err instanceof HttpError && err.code === 'not_found') throw absent(topic);
    throw err;
  }
  // A lookup that fails answers as if the resource were there: the subscription then stays quiet.
  if (kind.resource && !(await kind.resource.exists(db, id).catch(() => true))) throw absent(topic);
  return grant;
}

function absent({ kind, id }: Topic): HttpError {
  return new HttpError('not_found', `no ${kind.resource?.noun ?? 'resource'} with id "${id}"`);
}
