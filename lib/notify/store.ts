// Notification channels: rows with the webhook URL sealed (bound to the channel id) and a hint
// of it (host and last 4 characters) that is all an API answer ever shows.
import type { Db } from '../db/index.js';
import { keepLast } from '../db/keep-last-store.js';
import type { Sealer } from '../crypto/seal.js';
import { requireSealer } from '../crypto/seal.js';
import { newId, randomToken } from '../crypto/random.js';
import { badRequest, notFound } from '../http/errors.js';
import { OutboundRefused, type OutboundOptions } from '../net/outbound.js';
import { NOTIFY_EVENTS, type NotifyEvent } from './message.js';
import { CHANNEL_KINDS, CHANNEL_KIND_TABLE, type ChannelKind, type ChannelOptions } from './kinds/index.js';

export { CHANNEL_KINDS, type ChannelKind, type ChannelOptions };

export interface LastDelivery {
  at: string;
  ok: boolean;
  status: number | null;
  error: string | null;
}

export interface Channel {
  id: string;
  kind: ChannelKind;
  name: string;
  url_hint: string;
  events: NotifyEvent[];
  enabled: boolean;
  last_delivery: LastDelivery | null;
  /** An email channel's recipients (absent for the other kinds). */
  to?: string[];
  created_at: string;
  updated_at: string;
}

export interface DeliveryRow {
  at: string;
  event: string;
  ok: boolean;
  status: number | null;
  error: string | null;
  attempts: number;
}

export const DELIVERY_LOG_SIZE = 50;

export const channelBinding = (id: string) => `notification_channels:${id}:url`;
export const channelSecretBinding = (id: string) => `notification_channels:${id}:secret`;

type Row = {
  id: string;
  kind: string;
  name: string;
  url_hint: string;
  events: string;
  enabled: number;
  last_delivery: string | null;
  options: string | null;
  created_at: string;
  updated_at: string;
};

function view(r: Row): Channel {
  const options = r.options ? (JSON.parse(r.options) as ChannelOptions) : null;
  return {
    id: r.id,
    kind: r.kind as ChannelKind,
    name: r.name,
    url_hint: r.url_hint,
    events: JSON.parse(r.events) as NotifyEvent[],
    enabled: r.enabled === 1,
    last_delivery: r.last_delivery ? (JSON.parse(r.last_delivery) as LastDelivery) : null,
    ...(options?.to ? { to: options.to } : {}),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

const COLUMNS = [
  'id',
  'kind',
  'name',
  'url_hint',
  'events',
  'enabled',
  'last_delivery',
  'options',
  'created_at',
  'updated_at',
] as const;

/** The save-time check: the kind's and the guard's verdict on the URL, as a 400 naming the reason. */
export async function checkChannelUrl(
  kind: ChannelKind,
  url: string,
  options: ChannelOptions,
  guard: OutboundOptions,
): Promise<void> {
  try {
    await CHANNEL_KIND_TABLE[kind].check(url, options, guard);
  } catch (e) {
    if (e instanceof OutboundRefused)
      throw badRequest(`The notification URL is refused: ${e.reason}`, [{ field: 'url', message: e.reason }]);
    throw e;
  }
}

export async function listChannels(db: Db): Promise<Channel[]> {
  const rows = await db
    .selectFrom('notification_channels')
    .select(COLUMNS)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(view);
}

export async function getChannel(db: Db, id: string): Promise<Channel> {
  const r = await db
    .selectFrom('notification_channels')
    .select(COLUMNS)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) throw notFound(`No notification channel with id "${id}"`);
  return view(r);
}

export interface ChannelInput {
  kind: ChannelKind;
  name: string;
  url: string;
  events?: NotifyEvent[];
  enabled?: boolean;
  /** An email channel's recipients. */
  to?: string[];
  /** A signed kind's secret to keep (a revert re-creating a deleted channel); made when absent. */
  secret?: string;
}

const optionsOf = (kind: ChannelKind, to: string[] | undefined): ChannelOptions | null =>
  kind === 'email' ? { to: dedupe(to ?? []) } : null;

/** Creates the channel; a signed kind's secret is answered here, and never again. */
export async function createChannel(
  db: Db,
  sealer: Sealer,
  guard: OutboundOptions,
  input: ChannelInput,
  now = Date.now(),
): Promise<Channel & { secret?: string }> {
  requireSealer(sealer);
  const def = CHANNEL_KIND_TABLE[input.kind];
  const options = optionsOf(input.kind, input.to);
  await checkChannelUrl(input.kind, input.url, options ?? {}, guard);
  const id = newId(now);
  const at = new Date(now).toISOString();
  const secret = def.signed ? (input.secret ?? `whsec_${randomToken(32)}`) : undefined;
  await db
    .insertInto('notification_channels')
    .values({
      id,
      kind: input.kind,
      name: input.name,
      url_sealed: sealer.seal(input.url, channelBinding(id)),
      url_hint: def.hint(input.url),
      events: JSON.stringify(dedupe(input.events ?? [...NOTIFY_EVENTS])),
      enabled: input.enabled === false ? 0 : 1,
      last_delivery: null,
      options: options ? JSON.stringify(options) : null,
      secret_sealed: secret ? sealer.seal(secret, channelSecretBinding(id)) : null,
      created_at: at,
      updated_at: at,
    })
    .execute();
  const channel = await getChannel(db, id);
  return secret ? { ...channel, secret } : channel;
}

export interface ChannelPatch {
  name?: string;
  url?: string;
  events?: NotifyEvent[];
  enabled?: boolean;
  to?: string[];
}

export async function updateChannel(
  db: Db,
  sealer: Sealer,
  guard: OutboundOptions,
  id: string,
  patch: ChannelPatch,
  now = Date.now(),
): Promise<Channel> {
  const current = await getChannel(db, id);
  const set: Record<string, unknown> = { updated_at: new Date(now).toISOString() };
  if (patch.url !== undefined || patch.to !== undefined) {
    const options = optionsOf(current.kind, patch.to ?? current.to);
    if (patch.to !== undefined && !options)
      throw badRequest('Only an email channel has recipients', [
        { field: 'to', message: 'email channels only' },
      ]);
    const url = patch.url ?? (await channelUrl(db, sealer, id))!;
    requireSealer(sealer);
    await checkChannelUrl(current.kind, url, options ?? {}, guard);
    if (patch.url !== undefined) {
      set.url_sealed = sealer.seal(patch.url, channelBinding(id));
      set.url_hint = CHANNEL_KIND_TABLE[current.kind].hint(patch.url);
    }
    if (options) set.options = JSON.stringify(options);
  }
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.events !== undefined) set.events = JSON.stringify(dedupe(patch.events));
  if (patch.enabled !== undefined) set.enabled = patch.enabled ? 1 : 0;
  await db.updateTable('notification_channels').set(set).where('id', '=', id).execute();
  return getChannel(db, id);
}

export async function deleteChannel(db: Db, id: string): Promise<void> {
  const r = await db.deleteFrom('notification_channels').where('id', '=', id).executeTakeFirst();
  if (!r.numDeletedRows) throw notFound(`No notification channel with id "${id}"`);
}

/** The URL, opened only on the way out to the sender. */
export async function channelUrl(db: Db, sealer: Sealer, id: string): Promise<string | null> {
  const r = await db
    .selectFrom('notification_channels')
    .select('url_sealed')
    .where('id', '=', id)
    .executeTakeFirst();
  return r ? sealer.open(r.url_sealed, channelBinding(id)) : null;
}

/** What a delivery needs besides the URL: a signed kind's secret, the kind's options. */
export async function channelSecret(db: Db, sealer: Sealer, id: string): Promise<string | null> {
  const r = await db
    .selectFrom('notification_channels')
    .select('secret_sealed')
    .where('id', '=', id)
    .executeTakeFirst();
  return r?.secret_sealed ? sealer.open(r.secret_sealed, channelSecretBinding(id)) : null;
}

/** The audit state's reader: the row as stored (sealed values stay sealed). */
export function channelRow(db: Db, id: string) {
  return db.selectFrom('notification_channels').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Enabled channels subscribed to `event`. */
export async function channelsFor(db: Db, event: NotifyEvent): Promise<Channel[]> {
  return (await listChannels(db)).filter((c) => c.enabled && c.events.includes(event));
}

/** Appends to the channel's delivery log (keeping the newest 50) and sets last_delivery. */
export async function recordDelivery(db: Db, channelId: string, d: DeliveryRow): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const exists = await tx
      .selectFrom('notification_channels')
      .select('id')
      .where('id', '=', channelId)
      .executeTakeFirst();
    if (!exists) return; // deleted while the delivery ran
    await tx
      .insertInto('notification_deliveries')
      .values({
        channel_id: channelId,
        at: d.at,
        event: d.event,
        ok: d.ok ? 1 : 0,
        status: d.status,
        error: d.error,
        attempts: d.attempts,
      })
      .execute();
    await keepLast(tx, 'notification_deliveries', channelId, DELIVERY_LOG_SIZE);
    const last: LastDelivery = { at: d.at, ok: d.ok, status: d.status, error: d.error };
    await tx
      .updateTable('notification_channels')
      .set({ last_delivery: JSON.stringify(last) })
      .where('id', '=', channelId)
      .execute();
  });
}

export async function listDeliveries(db: Db, channelId: string): Promise<DeliveryRow[]> {
  await getChannel(db, channelId);
  const rows = await db
    .selectFrom('notification_deliveries')
    .select(['at', 'event', 'ok', 'status', 'error', 'attempts'])
    .where('channel_id', '=', channelId)
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => ({ ...r, ok: r.ok === 1 }));
}

function dedupe<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}
