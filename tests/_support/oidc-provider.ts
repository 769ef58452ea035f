// A real OpenID provider (oidc-provider) on loopback for the sign-in tests: one confidential
// client that must use PKCE, accounts whose claims the test sets and changes, and the provider's
// own development login and consent pages, driven over HTTP by `signInOverHttp` (or by a browser).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { testFetch } from './transport.js';

export interface AccountClaims {
  preferred_username?: string;
  email?: string;
  groups?: string[] | string;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Account id -> its claims; change them between sign-ins. */
  accounts: Map<string, AccountClaims>;
  /** The `max_age` of every authorization request the provider received, in order (null: none). */
  maxAges: Array<string | null>;
  stop(): Promise<void>;
}

/** `redirectUri`: the control plane's callback (SVC_PUBLIC_URL + /api/auth/oidc/callback). */
export async function startOidcProvider(
  redirectUri: string,
  opts: { claimsInIdToken?: boolean } = {},
): Promise<TestProvider> {
  // Untyped package (no bundled types): loaded dynamically and used through a narrow surface.
  const { default: Provider } = (await import('oidc-provider' as string)) as {
    default: new (issuer: string, config: unknown) => any;
  };
  const accounts = new Map<string, AccountClaims>();
  const maxAges: Array<string | null> = [];
  let handler: ((req: any, res: any) => void) | null = null;
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/auth?')) maxAges.push(new URL(req.url, 'http://x').searchParams.get('max_age'));
    handler!(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'svc-test';
  const clientSecret = randomBytes(24).toString('base64url');
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], profile: ['preferred_username', 'groups'], email: ['email'] },
    // Default: profile claims only from userinfo (as many providers do when an access token is issued).
    conformIdTokenClaims: !opts.claimsInIdToken,
    findAccount: async (_ctx: unknown, sub: string) => {
      if (!accounts.has(sub)) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...accounts.get(sub) }) };
    },
  });
  handler = provider.callback();
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    maxAges,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Cookies per origin, as a browser keeps them (paths ignored: each side reads its cookies by name). */
export class CookieJar {
  private readonly jars = new Map<string, Map<string, string>>();
  header(url: URL): string {
    return [...(this.jars.get(url.origin) ?? [])].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  /** The cookies of one origin, for a client that talks to it directly. */
  entries(origin: string): Array<[string, string]> {
    return [...(this.jars.get(origin) ?? [])];
  }
  get(origin: string, name: string): string | undefined {
    return this.jars.get(origin)?.get(name);
  }
  set(origin: string, name: string, value: string): void {
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map()));
    jar.set(name, value);
  }
  store(url: URL, res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1);
      let jar = this.jars.get(url.origin);
      if (!jar) this.jars.set(url.origin, (jar = new Map()));
      if (/max-age=0/i.test(c) || /expires=thu, 01 jan 1970/i.test(c) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }
}

export interface Hop {
  url: string;
  status: number;
  location: string | null;
  body: string;
}

/**
 * A browser's way through a sign-in: from `startUrl` (the control plane's start route), through the
 * provider's login and consent pages as `account`, back to the callback; answers every hop.
 * `tamper` may rewrite the callback URL before the browser follows it.
 */
export async function signInOverHttp(
  jar: CookieJar,
  startUrl: string,
  account: string,
  tamper?: (callback: URL) => URL,
): Promise<Hop[]> {
  const hops: Hop[] = [];
  let url = new URL(startUrl);
  let method = 'GET';
  let form: URLSearchParams | undefined;
  for (let i = 0; i < 20; i++) {
    if (tamper && url.pathname.endsWith('/api/auth/oidc/callback')) url = tamper(url);
    const headers: Record<string, string> = { cookie: jar.header(url) };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    // The control plane may be in-process (tests/_support/request.ts): testFetch serves it there.
    const res = await testFetch(url.href, { method, headers, body: form?.toString(), redirect: 'manual' });
    jar.store(url, res);
    const body = await res.text();
    const location = res.headers.get('location');
    hops.push({ url: url.href, status: res.status, location, body });
    form = undefined;
    method = 'GET';
    if (res.status >= 300 && res.status < 400 && location) {
      // The control plane's own final redirect (to a page of the dashboard) ends the walk.
      if (url.pathname.startsWith('/api/auth/oidc/callback')) return hops;
      url = new URL(location, url);
      continue;
    }
    // The provider's pages: login and consent forms, and the self-submitting form it uses to end
    // its session of another account before signing this one in. Hidden fields go back as they are.
    const formTag = res.status === 200 ? /<form[^>]*action="([^"]+)"/.exec(body) : null;
    if (formTag) {
      const action = formTag[1]!.replace(/&amp;/g, '&');
      form = new URLSearchParams();
      for (const m of body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g))
        form.set(m[1]!, m[2]!.replace(/&amp;/g, '&'));
      if (form.get('prompt') === 'login') {
        form.set('login', account);
        form.set('password', 'any');
      }
      method = 'POST';
      url = new URL(action, url);
      continue;
    }
    return hops;
  }
  throw new Error(`the sign-in did not end: ${hops.map((h) => `${h.status} ${h.url}`).join(' -> ')}`);
}
