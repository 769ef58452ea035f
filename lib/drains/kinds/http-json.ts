// Plain HTTP JSON: each batch is one POST of a JSON array, a line an object with its app,
// service and container.
import { checkOutboundUrl } from '../../net/outbound.js';
import { postBatch, urlHint } from './post.js';
import type { DrainKindDef, DrainLine } from './types.js';

export function jsonBatch(batch: readonly DrainLine[]): Buffer {
  return Buffer.from(
    JSON.stringify(
      batch.map((l) => ({
        time: new Date(l.at).toISOString(),
        app: l.app,
        app_id: l.appId,
        service: l.service,
        container: l.container,
        stream: l.stream,
        source: l.source,
        message: l.line,
      })),
    ),
  );
}

export const httpJson: DrainKindDef = {
  http: true,
  check: async (url, guard) => void (await checkOutboundUrl(url, guard)),
  hint: urlHint,
  sender: (target) => ({
    send: (batch) => postBatch(target, target.url, jsonBatch(batch)),
    close: () => {},
  }),
};
