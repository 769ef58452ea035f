// A local HTTPS webhook receiver (certificate from a throwaway CA, trusted by the tests through
// an injected agent) that records every request and answers as the test scripts it.
import { createServer, Agent, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCa, issue } from './pki.js';

export const RECEIVER_HOST = 'hooks.test';

export interface Received {
  path: string;
  host: string | undefined;
  headers: IncomingMessage['headers'];
  servername: string | false | null | undefined;
  body: string;
  json: any;
}

/** What the receiver does with a request: `ok`, a status, `slow` (never answers), `stream`, `redirect`. */
export type Behaviour = number | 'slow' | 'stream' | 'redirect';

export interface Receiver {
  port: number;
  url(path?: string): string;
  agent: Agent;
  received: Received[];
  /** Answers, in order; the last one repeats. */
  script: Behaviour[];
  /** Bytes the `stream` behaviour managed to send before the client hung up. */
  streamed: number;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-recv-'));
  const ca = await makeCa(dir, 'svc receiver CA');
  const leaf = await issue(ca, [RECEIVER_HOST, 'localhost', '127.0.0.1']);
  const r: Receiver = {
    port: 0,
    url: (path = '/hook') => `https://${RECEIVER_HOST}:${r.port}${path}`,
    agent: new Agent({ ca: ca.certPem, keepAlive: false }),
    received: [],
    script: [204],
    streamed: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((res) => server.close(() => res()));
      r.agent.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
  const server: Server = createServer(
    { cert: leaf.certPem, key: leaf.keyPem },
    (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown = null;
        try {
          json = JSON.parse(body);
        } catch {
          json = null;
        }
        const index = r.received.length;
        r.received.push({
          path: req.url ?? '',
          host: req.headers.host,
          headers: req.headers,
          servername: (req.socket as TLSSocket).servername,
          body,
          json,
        });
        const b = r.script[Math.min(index, r.script.length - 1)] ?? 204;
        if (b === 'slow') return; // never answers
        if (b === 'redirect') {
          res.writeHead(302, { location: `https://${RECEIVER_HOST}:${r.port}/elsewhere` }).end();
          return;
        }
        if (b === 'stream') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          const chunk = Buffer.alloc(64 * 1024, 0x61);
          const pump = () => {
            while (r.streamed < 10 * 1024 * 1024 && !res.destroyed) {
              r.streamed += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', pump);
            }
            if (!res.destroyed) res.end();
          };
          pump();
          return;
        }
        res.writeHead(b, { 'content-type': 'text/plain' }).end(b >= 400 ? 'receiver says no' : '');
      });
    },
  );
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.port = (server.address() as { port: number }).port;
  return r;
}

/** Resolves the receiver's name to loopback: with SVC_NOTIFY_ALLOW=127.0.0.1 the guard lets it through. */
export const receiverResolve = async (host: string) => {
  if (host === RECEIVER_HOST) return [{ address: '127.0.0.1', family: 4 as const }];
  throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
};
