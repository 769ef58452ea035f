// Every socket that acts for a credential (API and shell alike), checked again when credentials
// change: a revocation, logout, deleted operator or new password closes what it no longer allows;
// a credential that still stands but allows less (a role or app list changed) narrows the socket.
import type { WebSocket } from 'ws';
import type { Principal, Services } from '#lib/http/handler.js';
import { authenticate } from '#lib/auth/principal.js';
import { onCredentialsChanged } from '#lib/auth/cache.js';
import { isPromise, type Maybe } from '#lib/util/maybe.js';

/** What a connection authenticated with, to check it again when credentials change. */
export interface Credential {
  authorization: string | null;
  cookie: string | null;
}

export interface Owner {
  userId: string;
  credential: Credential;
  /** Closes the socket: its credential is gone. */
  end: (reason: string) => void;
  /** The credential still stands but may allow less: the socket re-checks what it holds. */
  narrowed?: (p: Principal) => void;
}

export interface CredentialWatch {
  add(ws: WebSocket, owner: Owner): void;
  remove(ws: WebSocket): void;
  close(): void;
}

/** A peer that ignores the close handshake is cut off after this long. */
const TERMINATE_MS = 1000;

export function watchCredentials(env: Services): CredentialWatch {
  const owners = new Map<WebSocket, Owner>();
  // Coalesced: one pass over the open sockets per burst of changes.
  let queued = false;
  const recheck = () => {
    queued = false;
    for (const [ws, owner] of owners) checkAgain(env, ws, owner, () => owners.delete(ws));
  };
  const off = onCredentialsChanged(() => {
    if (queued || owners.size === 0) return;
    queued = true;
    setImmediate(recheck);
  });
  return {
    add: (ws, owner) => void owners.set(ws, owner),
    remove: (ws) => void owners.delete(ws),
    close: off,
  };
}

function checkAgain(env: Services, ws: WebSocket, owner: Owner, forget: () => void): void {
  const verdict = (still: Principal | null) => {
    if (!still || still.user.id !== owner.userId) {
      forget();
      owner.end('credentials revoked');
      setTimeout(() => ws.terminate(), TERMINATE_MS).unref();
      return;
    }
    owner.narrowed?.(still);
  };
  const { authorization, cookie } = owner.credential;
  // In place on SQLite; a promise per socket on PostgreSQL.
  let still: Maybe<Principal | null>;
  try {
    still = authenticate(env, {
      get: (name: string) => (name === 'authorization' ? authorization : name === 'cookie' ? cookie : null),
    });
  } catch {
    still = null;
  }
  if (isPromise(still)) still.then(verdict, () => verdict(null));
  else verdict(still);
}
