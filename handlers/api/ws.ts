import { HttpError } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';

// The upgrade itself is handled by the runtime before any handler runs; a plain GET lands here.
export const GET = route(
  {
    permission: 'self.read',
    summary: 'WebSocket: live events by topic',
    websocket: {
      description:
        'Upgrade with `Upgrade: websocket`, authenticated like the API (the session cookie with a same-origin `Origin`, or a bearer token). ' +
        'Client messages: `{"type":"subscribe","topic":T}` and `{"type":"unsubscribe","topic":T}`. Server messages: `{"type":"event","topic":T,"ts":ts,"data":{...}}` and `{"type":"error","code","error"}`. ' +
        'Topics: `apps` (data: `{"type":"status","app_id","app","status"}` or `{"type":"container","app_id","app","service","container","action","status","at"}`), `deployments`, `build:<deploymentId>`, `logs:<appId>`, `stats:<appId>`, `host`. ' +
        'A plain GET without the upgrade answers 400.',
    },
    responses: { 101: null },
  },
  () => {
    throw new HttpError('bad_request', 'GET /api/ws must be a WebSocket upgrade', undefined, {
      upgrade: 'websocket',
    });
  },
);
