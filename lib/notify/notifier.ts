// Turns bus events into deliveries: every event whose data.type is a notification event reaches
// the channels subscribed to it, off the request path, through the outbound guard, with up to 3
// attempts and backoff. traffic_anomaly is debounced per (IP, kind) for the monitor's cooldown.
import type { Bus, BusEvent } from '../events/bus.js';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import type { Logger } from '../log.js';
import { postJson, OutboundRefused, type OutboundOptions } from '../net/outbound.js';
import {
  buildMessage,
  discordPayload,
  isNotifyEvent,
  slackPayload,
  type Message,
  type NotifyEvent,
} from './message.js';
import { channelsFor, channelUrl, getChannel, recordDelivery, type Channel } from './store.js';

export const MAX_ATTEMPTS = 3;
const QUEUE_MAX = 500;
const DEBOUNCE_MAX_KEYS = 4096;

export interface NotifierDeps {
  db: Db;
  sealer: Sealer;
  log: Logger;
  /** The control plane's own URL (https://<control domain> or SVC_PUBLIC_URL), for links. */
  baseUrl: string | null;
  cooldownSeconds: number;
  now: () => number;
}

export interface SendResult {
  ok: boolean;
  status: number | null;
  error?: string;
  attempts: number;
  /** The guard refused the URL (it would be a 400 at save time too). */
  refused?: boolean;
}

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    /** Notification channels: bus events to Discord/Slack through the outbound guard. */
    notifier: Notifier;
  }
}

export class Notifier {
  /** The guard's settings (SVC_NOTIFY_ALLOW); tests add an agent trusting their receiver. */
  readonly transport: OutboundOptions;
  /** Waits between attempts (ms); the first attempt is immediate. */
  backoffMs = [1_000, 4_000];
  private readonly queue: Array<() => Promise<void>> = [];
  private running = 0;
  private readonly debounce = new Map<string, number>();
  private idleWaiters: Array<() => void> = [];
  private stopped = false;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly deps: NotifierDeps,
    transport: OutboundOptions,
  ) {
    this.transport = { ...transport };
  }

  start(bus: Bus): void {
    this.stopped = false;
    this.unsubscribe = bus.onAny((e) => this.onEvent(e));
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.queue.length = 0;
    return this.idle();
  }

  /** Resolves when nothing is queued or in flight (tests, shutdown). */
  idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private onEvent(e: BusEvent): void {
    const data = e.data as Record<string, unknown> | null;
    const type = data?.type;
    if (!data || !isNotifyEvent(type)) return;
    if (type === 'traffic_anomaly') {
      // Allow-listed addresses are recorded by the monitor and never notified.
      if (data.notified === false) return;
      const key = `${String(data.ip)}|${String(data.kind)}`;
      const now = this.deps.now();
      const last = this.debounce.get(key);
      if (last !== undefined && now - last < this.deps.cooldownSeconds * 1000) return;
      this.debounce.delete(key);
      this.debounce.set(key, now);
      if (this.debounce.size > DEBOUNCE_MAX_KEYS) this.debounce.delete(this.debounce.keys().next().value!);
    }
    this.dispatch(type, data, e.ts);
  }

  /** Queues the event for every subscribed channel; never blocks the publisher. */
  dispatch(
    event: NotifyEvent,
    data: Record<string, unknown>,
    at = new Date(this.deps.now()).toISOString(),
  ): void {
    if (this.stopped) return;
    const message = buildMessage(event, data, this.deps.baseUrl, at);
    this.enqueue(async () => {
      const channels = await channelsFor(this.deps.db, event);
      await Promise.all(channels.map((c) => this.deliver(c, message)));
    });
  }

  /** The `test` route: one message to one channel now, answered to the caller (and logged). */
  async test(channelId: string): Promise<SendResult> {
    const channel = await getChannel(this.deps.db, channelId);
    const message = buildMessage(
      'control_plane_started',
      {},
      this.deps.baseUrl,
      new Date(this.deps.now()).toISOString(),
    );
    message.title = `Test notification for ${channel.name}`;
    message.text = 'If you can read this, svc can reach this channel.';
    message.fields = [];
    return this.deliver(channel, message, 1);
  }

  private enqueue(job: () => Promise<void>): void {
    if (this.queue.length >= QUEUE_MAX) {
      this.deps.log.warn({ queued: this.queue.length }, 'notification queue full; dropping an event');
      return;
    }
    this.queue.push(job);
    this.pump();
  }

  private pump(): void {
    while (this.running < 4 && this.queue.length) {
      const job = this.queue.shift()!;
      this.running++;
      void job()
        .catch((err) => this.deps.log.warn({ err: String(err) }, 'notification delivery failed'))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) {
            const w = this.idleWaiters;
            this.idleWaiters = [];
            for (const fn of w) fn();
          }
        });
    }
  }

  private async deliver(channel: Channel, message: Message, maxAttempts = MAX_ATTEMPTS): Promise<SendResult> {
    const url = await channelUrl(this.deps.db, this.deps.sealer, channel.id);
    if (url === null) return { ok: false, status: null, error: 'channel deleted', attempts: 0 };
    const payload = channel.kind === 'discord' ? discordPayload(message) : slackPayload(message);
    let result: SendResult = { ok: false, status: null, attempts: 0 };
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      result = { ...(await this.once(url, payload)), attempts: attempt };
      if (result.ok || !retryable(result) || this.stopped) break;
      if (attempt < maxAttempts) await sleep(this.backoffMs[attempt - 1] ?? this.backoffMs.at(-1) ?? 1000);
    }
    await recordDelivery(this.deps.db, channel.id, {
      at: new Date(this.deps.now()).toISOString(),
      event: message.event,
      ok: result.ok,
      status: result.status,
      error: result.error ?? null,
      attempts: result.attempts,
    });
    if (!result.ok)
      this.deps.log.warn(
        { channel: channel.id, event: message.event, status: result.status, error: result.error },
        'notification not delivered',
      );
    return result;
  }

  private async once(url: string, payload: unknown): Promise<Omit<SendResult, 'attempts'>> {
    try {
      const r = await postJson(url, payload, this.transport);
      if (r.status >= 200 && r.status < 300) return { ok: true, status: r.status };
      const hint = r.body.trim().slice(0, 200);
      return {
        ok: false,
        status: r.status,
        error: `the server answered ${r.status}${r.status >= 300 && r.status < 400 ? ' (redirects are not followed)' : ''}${hint ? `: ${hint}` : ''}`,
      };
    } catch (e) {
      if (e instanceof OutboundRefused)
        return { ok: false, status: null, error: `refused: ${e.reason}`, refused: true };
      return { ok: false, status: null, error: (e as Error).message };
    }
  }
}

function retryable(r: SendResult): boolean {
  if (r.refused) return false;
  return r.status === null || r.status >= 500 || r.status === 429;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
