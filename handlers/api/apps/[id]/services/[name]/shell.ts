import { HttpError, notFound } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';
import { serviceParams } from '../../../_lib.js';

// The upgrade is handled by the runtime (runtime/ws.ts) before any handler runs; this file
// documents the route and answers a plain GET.
export const GET = route(
  {
    permission: 'app.shell',
    summary: "WebSocket: a shell in a service's running container (SVC_ENABLE_SHELL=true)",
    params: serviceParams,
    stepUp: true,
    websocket: {
      description:
        'Upgrade with `Upgrade: websocket`, authenticated like the API (the session cookie with a same-origin `Origin`, or a bearer token) and a recent step-up. ' +
        'An engine exec with a TTY: binary frames carry the terminal both ways; a text frame `{"type":"resize","rows","cols"}` resizes. ' +
        'Frames over 64 KiB close the socket, 15 idle minutes close it (SVC_SHELL_IDLE), ' +
        '8 hours close it whatever the activity (SVC_SHELL_MAX), and revoking its credential (token revoked, logout, ' +
        'session deleted) closes it (1008); at most 4 shells per operator; opening and closing are audited. ' +
        'Refusals before the upgrade: 404 (shell disabled, or no such app or service), 401, 403 (no step-up), 409 (service not running, too many shells). ' +
        'A plain GET without the upgrade answers 400 (404 when the shell is disabled), step-up or not.',
    },
    responses: { 101: null },
  },
  (_req, { env }) => {
    if (!env.config.enableShell) throw notFound('No such route');
    throw new HttpError('bad_request', 'The shell must be a WebSocket upgrade', undefined, {
      upgrade: 'websocket',
    });
  },
);
