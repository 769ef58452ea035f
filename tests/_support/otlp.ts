// An OTLP/HTTP logs receiver on loopback for the drain tests. No OpenTelemetry collector is
// packaged in Debian, so this small server stands in for one: HTTPS (a throwaway CA) on
// /v1/logs, it checks each request the way the OTLP/HTTP JSON encoding requires (an
// ExportLogsServiceRequest: resourceLogs -> scopeLogs -> logRecords, timeUnixNano as a decimal
// string, AnyValue bodies, KeyValue attributes) and answers 400 to a malformed one, as a
// collector would; it can be scripted to fail (503) or to stop answering.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCa, issue } from './pki.js';

export const OTLP_HOST = 'otel.test';

export interface OtlpRecord {
  resource: Record<string, string>;
  time: number;
  severity: string;
  body: string;
  attributes: Record<string, string>;
}

export interface OtlpReceiver {
  port: number;
  caPem: string;
  url(path?: string): string;
  records: OtlpRecord[];
  requests: number;
  rejected: string[];
  /** Answer 503 to every request while true. */
  failing: boolean;
  close(): Promise<void>;
}

type KeyValue = { key?: unknown; value?: { stringValue?: unknown } };

function attrs(list: unknown, where: string): Record<string, string> {
  if (!Array.isArray(list)) throw new Error(`${where}: attributes is not an array`);
  const out: Record<string, string> = {};
  for (const kv of list as KeyValue[]) {
    if (typeof kv.key !== 'string' || typeof kv.value?.stringValue !== 'string')
      throw new Error(`${where}: an attribute is not a KeyValue with a stringValue`);
    out[kv.key] = kv.value.stringValue;
  }
  return out;
}

/** The records of an ExportLogsServiceRequest in JSON; throws naming what is malformed. */
export function parseOtlpLogs(body: unknown): OtlpRecord[] {
  const out: OtlpRecord[] = [];
  const rl = (body as { resourceLogs?: unknown })?.resourceLogs;
  if (!Array.isArray(rl)) throw new Error('resourceLogs is not an array');
  for (const r of rl as Array<{ resource?: { attributes?: unknown }; scopeLogs?: unknown }>) {
    const resource = attrs(r.resource?.attributes, 'resource');
    if (!Array.isArray(r.scopeLogs)) throw new Error('scopeLogs is not an array');
    for (const s of r.scopeLogs as Array<{ logRecords?: unknown }>) {
      if (!Array.isArray(s.logRecords)) throw new Error('logRecords is not an array');
      for (const l of s.logRecords as Array<Record<string, unknown>>) {
        if (typeof l.timeUnixNano !== 'string' || !/^\d{1,20}$/.test(l.timeUnixNano))
          throw new Error('timeUnixNano is not a decimal string');
        const b = l.body as { stringValue?: unknown } | undefined;
        if (typeof b?.stringValue !== 'string') throw new Error('body is not a stringValue');
        out.push({
          resource,
          time: Number(BigInt(l.timeUnixNano) / 1_000_000n),
          severity: String(l.severityText ?? ''),
          body: b.stringValue,
          attributes: attrs(l.attributes ?? [], 'logRecord'),
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-otlp-'));
  const ca = await makeCa(dir, 'svc otlp CA');
  const leaf = await issue(ca, [OTLP_HOST, 'localhost', '127.0.0.1']);
  const r: OtlpReceiver = {
    port: 0,
    caPem: ca.certPem,
    url: (path = '') => `https://${OTLP_HOST}:${r.port}${path}`,
    records: [],
    requests: 0,
    rejected: [],
    failing: false,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((res) => server.close(() => res()));
      await rm(dir, { recursive: true, force: true });
    },
  };
  const server: Server = createServer(
    { cert: leaf.certPem, key: leaf.keyPem },
    (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        r.requests++;
        if (r.failing) return void res.writeHead(503).end();
        if (
          req.url !== '/v1/logs' ||
          req.method !== 'POST' ||
          !String(req.headers['content-type']).startsWith('application/json')
        ) {
          r.rejected.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
          return void res.writeHead(404).end();
        }
        try {
          r.records.push(...parseOtlpLogs(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        } catch (e) {
          r.rejected.push((e as Error).message);
          return void res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ message: (e as Error).message }));
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"partialSuccess":{}}');
      });
    },
  );
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.port = (server.address() as { port: number }).port;
  return r;
}
