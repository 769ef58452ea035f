// OTLP/HTTP with JSON encoding (the logs signal): a batch is one ExportLogsServiceRequest, lines
// grouped by resource (one per app service container) with the app, service and container as
// resource attributes. A URL without a path gets the signal's default path, /v1/logs.
import { checkOutboundUrl } from '../../net/outbound.js';
import { postBatch, urlHint } from './post.js';
import type { DrainKindDef, DrainLine } from './types.js';

type Attr = { key: string; value: { stringValue: string } };
const attr = (key: string, v: string): Attr => ({ key, value: { stringValue: v } });

/** stderr and a deployment's error stream are errors; everything else is information. */
const severity = (l: DrainLine) =>
  l.stream === 'stderr' || l.stream === 'error'
    ? { severityNumber: 17, severityText: 'ERROR' }
    : { severityNumber: 9, severityText: 'INFO' };

export function otlpBatch(batch: readonly DrainLine[]): Buffer {
  const groups = new Map<string, DrainLine[]>();
  for (const l of batch) {
    const key = `${l.appId}\u0000${l.service}\u0000${l.container}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(l);
  }
  const resourceLogs = [...groups.values()].map((lines) => {
    const first = lines[0]!;
    return {
      resource: {
        attributes: [
          attr('service.name', `${first.app}/${first.service}`),
          attr('service.namespace', first.app),
          attr('container.name', first.container),
          attr('svc.app', first.app),
          attr('svc.app_id', first.appId),
          attr('svc.service', first.service),
        ],
      },
      scopeLogs: [
        {
          scope: { name: 'svc' },
          logRecords: lines.map((l) => ({
            timeUnixNano: `${l.at}000000`,
            ...severity(l),
            body: { stringValue: l.line },
            attributes: [attr('log.iostream', l.stream), attr('svc.source', l.source)],
          })),
        },
      ],
    };
  });
  return Buffer.from(JSON.stringify({ resourceLogs }));
}

export function otlpEndpoint(url: string): string {
  const u = new URL(url);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1/logs';
  return u.toString();
}

export const otlpHttp: DrainKindDef = {
  http: true,
  check: async (url, guard) => void (await checkOutboundUrl(otlpEndpoint(url), guard)),
  hint: urlHint,
  sender: (target) => {
    const endpoint = otlpEndpoint(target.url);
    return { send: (batch) => postBatch(target, endpoint, otlpBatch(batch)), close: () => {} };
  },
};
