// A unix-socket proxy in front of the shared Docker engine, so a test can make "the engine" fail
// for one control plane without touching dockerd (shared by everyone, never stopped): point the
// server's SVC_DOCKER_SOCKET here, then cut the event stream, take the engine away, or wedge it.
// Bytes are forwarded untouched; the only parsing is spotting request lines, to know which
// connection carries the event stream.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DOCKER_SOCKET } from './docker.js';

export interface EngineProxy {
  socketPath: string;
  /** Request lines seen (`GET /v1.43/events?...`), oldest first. */
  requests: string[];
  /** How many event-stream requests have been forwarded so far. */
  eventStreams(): number;
  /** Drops the connections carrying the event stream (the follower sees its stream break). */
  cutEvents(): void;
  /** While on, a new event-stream request is dropped as soon as it is seen. */
  refuseEvents(on: boolean): void;
  /** The engine goes away: every connection dropped, the socket gone (connect gets ENOENT). */
  cut(): Promise<void>;
  /** The engine is back. */
  restore(): Promise<void>;
  /** While on, the engine is wedged: connections are accepted, nothing is forwarded either way. */
  stall(on: boolean): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  events: boolean;
}

const REQUEST_LINE = /(?:^|\r\n)(GET|POST|PUT|DELETE|HEAD) (\/\S*) HTTP\/1\.[01]\r\n/g;

export async function startEngineProxy(target = DOCKER_SOCKET): Promise<EngineProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-engine-proxy-'));
  const socketPath = join(dir, 'docker.sock');
  const pairs = new Set<Pair>();
  const requests: string[] = [];
  let streams = 0;
  let refusing = false;
  let stalled = false;
  let server: Server | null = null;

  const drop = (p: Pair) => {
    p.client.destroy();
    p.upstream?.destroy();
    pairs.delete(p);
  };
  const link = (p: Pair) => {
    const up = connect(target);
    p.upstream = up;
    up.on('error', () => drop(p));
    up.on('close', () => drop(p));
    p.client.pipe(up);
    up.pipe(p.client);
  };
  const onConnection = (client: Socket) => {
    const p: Pair = { client, upstream: null, events: false };
    pairs.add(p);
    client.on('error', () => drop(p));
    client.on('close', () => drop(p));
    client.on('data', (chunk: Buffer) => {
      for (const m of chunk.toString('latin1').matchAll(REQUEST_LINE)) {
        requests.push(`${m[1]} ${m[2]}`);
        if (/^\/(v[\d.]+\/)?events\b/.test(m[2]!)) {
          p.events = true;
          if (refusing) {
            drop(p);
            return;
          }
          streams += 1;
        }
      }
    });
    if (stalled) client.pause();
    else link(p);
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer(onConnection);
      s.once('error', reject);
      s.listen(socketPath, () => {
        server = s;
        resolve();
      });
    });
  await listen();

  const cut = async () => {
    const s = server;
    server = null;
    const closed = s ? new Promise<void>((r) => s.close(() => r())) : Promise.resolve();
    for (const p of [...pairs]) drop(p);
    await closed;
    await rm(socketPath, { force: true });
  };

  return {
    socketPath,
    requests,
    eventStreams: () => streams,
    cutEvents() {
      for (const p of [...pairs]) if (p.events) drop(p);
    },
    refuseEvents(on) {
      refusing = on;
    },
    cut,
    async restore() {
      if (!server) await listen();
    },
    stall(on) {
      stalled = on;
      for (const p of pairs) {
        if (on) {
          p.client.unpipe();
          p.upstream?.unpipe();
          p.client.pause();
          p.upstream?.pause();
        } else if (p.upstream) {
          p.client.pipe(p.upstream);
          p.upstream.pipe(p.client);
          p.client.resume();
          p.upstream.resume();
        } else {
          link(p);
          p.client.resume();
        }
      }
    },
    async close() {
      await cut();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
