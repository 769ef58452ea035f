// What one drain kind is: how its URL is checked at save time, what an answer shows of it, and a
// sender that delivers a batch of lines. One file per kind, in the table of ./index.ts.
import type { OutboundOptions } from '../../net/outbound.js';

export const LINE_SOURCES = ['container', 'deployment', 'run'] as const;
export type LineSource = (typeof LINE_SOURCES)[number];

/** One log line on its way out. */
export interface DrainLine {
  /** Epoch milliseconds. */
  at: number;
  appId: string;
  app: string;
  service: string;
  /** A container's name, a Swarm task, a deployment or a run. */
  container: string;
  /** stdout, stderr, or the stream of a deployment log line (deploy, build, release...). */
  stream: string;
  source: LineSource;
  line: string;
}

export interface BatchResult {
  ok: boolean;
  /** The HTTP status (null: none, a socket kind, or no answer). */
  status: number | null;
  error?: string;
  /** The guard refused the address: retrying does not help until the drain changes. */
  refused?: boolean;
}

export interface DrainTarget {
  url: string;
  /** HTTP kinds: sent with every request (sealed at rest). */
  headers: Record<string, string>;
  transport: OutboundOptions;
}

export interface DrainSender {
  send(batch: readonly DrainLine[]): Promise<BatchResult>;
  close(): void;
}

export interface DrainKindDef {
  /** Save time: throws OutboundRefused or a 400 naming what is wrong with the URL. */
  check(url: string, guard: OutboundOptions): Promise<void>;
  hint(url: string): string;
  sender(target: DrainTarget): DrainSender;
  /** The kind sends HTTP requests (custom headers apply). */
  http: boolean;
}
