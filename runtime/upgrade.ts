// The WebSocket upgrade's path: UPGRADE_STAGES, built from the request's own stages (match, select,
// authenticate, permission, reach, authorise) plus the two only an upgrade has (the route must be a
// WebSocket one; a cookie must come from our own page). A refusal is the same body a request gets
// (`failure`, lib/http/respond.ts errorResponse), written on the raw socket before any upgrade.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Services } from '#lib/http/handler.js';
import { HttpError } from '#lib/http/errors.js';
import { headerGetter } from '#lib/http/headers.js';
import { forwardedSecure } from '#lib/http/client-address.js';
import { attempt, then, type Maybe } from '#lib/util/maybe.js';
import { Exchange, failure, runStages, type Site, type Stage, type StageResult } from './pipeline.js';
import { load, match } from './match.js';
import { authenticate, authorise, permission, reach, select } from './stages.js';

/** Takes the socket once every stage agreed; may still refuse by throwing (a shell's service is not running). */
export type Acceptor = (x: Exchange, req: IncomingMessage, socket: Duplex, head: Buffer) => Maybe<void>;

export interface Upgrades {
  /** What takes the socket of a WebSocket route (by pattern) this host serves now; undefined: none. */
  acceptor: (pattern: string) => Acceptor | undefined;
  /** Whether a cookie-authenticated upgrade comes from one of our own pages (`allowedOrigin`). */
  originOk: (origin: string | null, host: string | null, secure: boolean) => boolean;
}

/** A WebSocket upgrade's path, in order (docs/architecture.md "A request's path" lists the same names). */
export const UPGRADE_STAGES: readonly Stage[] = [
  { name: 'match', run: match },
  { name: 'load', run: load },
  { name: 'select', run: select },
  { name: 'websocket', run: websocket },
  { name: 'authenticate', run: authenticate },
  { name: 'origin', run: origin },
  { name: 'permission', run: permission },
  { name: 'reach', run: reach },
  { name: 'authorise', run: authorise },
];

/** Stage `websocket`: only a route declared as one and served here upgrades (a disabled shell is no route). */
function websocket(x: Exchange): StageResult {
  if (!x.spec.websocket || !x.site.upgrades?.acceptor(x.route.pattern))
    throw new HttpError('not_found', 'No such route');
}

/** Stage `origin`: cookies ride along on cross-site WebSocket handshakes; only our own pages may use them. */
function origin(x: Exchange): StageResult {
  const principal = x.principal;
  if (principal === null || principal.kind !== 'session') return;
  const { headers } = x;
  const secure =
    x.meta.tls === true || forwardedSecure(x.meta.peer, headers.get('x-forwarded-proto'), x.site.trusted);
  if (!x.site.upgrades!.originOk(headers.get('origin'), headers.get('host'), secure))
    throw new HttpError('unauthorized', 'Authentication required');
}

/** Runs an upgrade through UPGRADE_STAGES and the route's acceptor, or writes the refusal. */
export function upgrade(site: Site, req: IncomingMessage, socket: Duplex, head: Buffer, tls: boolean): void {
  socket.on('error', () => socket.destroy());
  const meta = { peer: req.socket.remoteAddress, target: req.url, rawHeaders: req.headers, tls };
  const x = new Exchange(site, null, meta, headerGetter(req.headers), req.method ?? 'GET', true);
  const refused = attempt(
    () =>
      then(runStages(UPGRADE_STAGES, x), (r): Maybe<Response | void> => {
        if (r !== undefined) return r;
        // Asked again: the configuration may have changed while the stages waited.
        const accept = site.upgrades!.acceptor(x.route.pattern);
        if (!accept) throw new HttpError('not_found', 'No such route');
        return accept(x, req, socket, head);
      }),
    (e) => failure(site.env, e, x.requestId),
  );
  void then(refused, (r) => (r === undefined ? undefined : refuse(site.env, socket, r)));
}

/** Writes an answer on a socket that was never upgraded, and closes it. */
async function refuse(env: Pick<Services, 'log'>, socket: Duplex, response: Response): Promise<void> {
  try {
    const body = Buffer.from(await response.text());
    const head = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
    response.headers.forEach((value, name) => {
      if (name !== 'content-length' && name !== 'connection') head.push(`${name}: ${value}`);
    });
    head.push(`content-length: ${body.length}`, 'connection: close', '', '');
    socket.end(Buffer.concat([Buffer.from(head.join('\r\n'), 'latin1'), body]));
  } catch (err) {
    env.log.error({ err }, 'websocket refusal could not be written');
    socket.destroy();
  }
}

/**
 * The origins a cookie-authenticated upgrade may come from. With SVC_PUBLIC_URL or a control
 * domain configured, those; the plain-HTTP fallback (`http://<ip>:9393`) stays usable because a
 * Host that is an IP literal cannot be a rebinding attacker's name. Without configuration, the
 * origin the request's own Host names. Cookies are never sent to another site's name, so an
 * Origin that matches the Host it was sent to is our own page.
 */
export function allowedOrigin(
  config: Pick<Services['config'], 'publicUrl' | 'controlDomain'>,
): (origin: string | null, host: string | null, secure: boolean) => boolean {
  const configured = new Set<string>();
  if (config.publicUrl) configured.add(new URL(config.publicUrl).origin);
  if (config.controlDomain) configured.add(`https://${config.controlDomain}`);
  return (origin, host, secure) => {
    if (!origin || !host) return false;
    const o = origin.toLowerCase();
    if (configured.has(o)) return true;
    const own = `${secure ? 'https' : 'http'}://${host.toLowerCase()}`;
    if (o !== own) return false;
    if (configured.size === 0) return true;
    const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
    return isIP(name) !== 0;
  };
}
