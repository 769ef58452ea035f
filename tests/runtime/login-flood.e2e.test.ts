// Login under attack, over the real server: a bounded hashing queue (429 with Retry-After beyond
// it, never a pile-up), a per-account lock on failures, and the operator's known device that
// neither the lock nor the strangers' queue holds back. No timing is asserted: the speed figure
// is `npm run bench:login-flood`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, Client, ADMIN, setupToken, type TestServer } from '../_support/server.js';
import { hashing } from '#lib/auth/passwords.js';

const servers: TestServer[] = [];
after(async () => {
  for (const s of servers) await s.stop();
});

async function server(vars: Record<string, string>): Promise<TestServer> {
  const s = await startTestServer({ SVC_AUTH_RATE_LIMIT: '1000', ...vars });
  servers.push(s);
  const c = new Client(s.url);
  assert.equal(
    (await c.req('POST', '/api/setup/admin', { token: await setupToken(s), ...ADMIN })).status,
    201,
  );
  return s;
}

/** A stranger: its own address, as a trusted proxy (127.0.0.1) reports it. */
function stranger(s: TestServer, n: number): Client {
  return new Client(s.url, { 'x-forwarded-for': `198.51.100.${n % 250}` });
}

test('a flood of logins is bounded: beyond a short queue strangers get 429 with Retry-After, and nothing piles up', async () => {
  // A realistic hash cost, so that the flood arrives faster than hashes finish.
  const s = await server({ SVC_PASSWORD_COST: '16' });
  let peakWaiting = 0;
  const watch = setInterval(() => (peakWaiting = Math.max(peakWaiting, hashing.stats().waiting.normal)), 1);
  const answers = await Promise.all(
    Array.from({ length: 80 }, (_, i) =>
      stranger(s, i).req('POST', '/api/auth/login', { username: `user-${i}`, password: 'not the password' }),
    ),
  );
  clearInterval(watch);
  const limited = answers.filter((r) => r.status === 429);
  assert.ok(limited.length > 0, 'no attempt was refused: the queue is unbounded');
  for (const r of limited) {
    assert.equal(r.body.code, 'rate_limited');
    assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  }
  for (const r of answers) assert.ok(r.status === 401 || r.status === 429, `${r.status} ${r.text}`);
  assert.ok(peakWaiting <= 4, `${peakWaiting} hashes waited`);
  assert.deepEqual(hashing.stats(), { active: 0, waiting: { normal: 0, priority: 0 } });
});

test("failed passwords lock the account for strangers, existing or not; the operator's known device still logs in", async () => {
  const s = await server({ SVC_AUTH_ACCOUNT_LIMIT: '3' });
  // The operator's browser: one login makes it a known device (svc_device, HttpOnly, /api/auth only).
  const browser = new Client(s.url, { 'x-forwarded-for': '192.0.2.10' });
  const first = await browser.req('POST', '/api/auth/login', ADMIN);
  assert.equal(first.status, 200);
  const device = first.headers.getSetCookie().find((c) => c.startsWith('svc_device='))!;
  assert.match(device, /HttpOnly/);
  assert.match(device, /Path=\/api\/auth/);
  assert.equal((await browser.req('POST', '/api/auth/logout')).status, 204);
  assert.equal(browser.cookies.has('svc_session'), false);
  assert.ok(browser.cookies.has('svc_device'));

  for (let i = 0; i < 3; i++)
    assert.equal(
      (await stranger(s, i).req('POST', '/api/auth/login', { username: 'admin', password: `guess ${i}` }))
        .status,
      401,
    );
  const locked = await stranger(s, 10).req('POST', '/api/auth/login', {
    username: 'admin',
    password: 'guess 4',
  });
  assert.equal(locked.status, 429);
  assert.equal(locked.body.code, 'rate_limited');
  assert.match(locked.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  // Locked means locked for strangers, even with the right password (and the case of the name does not matter).
  assert.equal(
    (await stranger(s, 11).req('POST', '/api/auth/login', { username: 'ADMIN', password: ADMIN.password }))
      .status,
    429,
  );
  // The operator's browser is not a stranger.
  const mine = await browser.req('POST', '/api/auth/login', ADMIN);
  assert.equal(mine.status, 200, mine.text);
  assert.equal(mine.body.user.username, 'admin');
  // A forged or altered device cookie is no device.
  const forged = new Client(s.url);
  forged.cookies.set(
    'svc_device',
    browser.cookies.get('svc_device')!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
  );
  assert.equal((await forged.req('POST', '/api/auth/login', ADMIN)).status, 429);

  // Unknown names are counted the same way: the lock says nothing about which names exist.
  for (let i = 0; i < 3; i++)
    assert.equal(
      (await stranger(s, 20 + i).req('POST', '/api/auth/login', { username: 'ghost', password: 'x' })).status,
      401,
    );
  assert.equal(
    (await stranger(s, 30).req('POST', '/api/auth/login', { username: 'ghost', password: 'x' })).status,
    429,
  );
});

test('a known device that keeps failing is demoted to a stranger', async () => {
  const s = await server({ SVC_AUTH_ACCOUNT_LIMIT: '3' });
  const browser = new Client(s.url);
  assert.equal((await browser.req('POST', '/api/auth/login', ADMIN)).status, 200);
  await browser.req('POST', '/api/auth/logout');
  // Someone at the operator's machine guessing: the device's own failures run out (5).
  for (let i = 0; i < 5; i++)
    assert.equal(
      (await browser.req('POST', '/api/auth/login', { username: 'admin', password: `wrong ${i}` })).status,
      401,
    );
  assert.equal((await browser.req('POST', '/api/auth/login', ADMIN)).status, 429);
});

test("during a flood from 50 addresses the operator's known device logs in while strangers are refused", async () => {
  const s = await server({ SVC_PASSWORD_COST: '15', SVC_AUTH_RATE_LIMIT: '10' });
  const browser = new Client(s.url, { 'x-forwarded-for': '192.0.2.99' });
  assert.equal((await browser.req('POST', '/api/auth/login', ADMIN)).status, 200);
  await browser.req('POST', '/api/auth/logout');

  let stop = false;
  const statuses: number[] = [];
  const flood = Array.from({ length: 50 }, async (_, a) => {
    const c = new Client(s.url, { 'x-forwarded-for': `203.0.113.${a + 1}` });
    for (let i = 0; !stop || i < 8; i++) {
      const r = await c.req('POST', '/api/auth/login', {
        username: i % 2 ? 'admin' : `u${a}-${i}`,
        password: 'flood',
      });
      statuses.push(r.status);
      if (i > 40) break;
    }
  });
  // Once the flood is well under way (strangers already being turned away), the operator logs in.
  while (!statuses.includes(429)) await new Promise((r) => setTimeout(r, 10));
  const mine = await browser.req('POST', '/api/auth/login', ADMIN);
  stop = true;
  await Promise.all(flood);
  assert.equal(mine.status, 200, mine.text);
  assert.ok(statuses.length >= 400, `${statuses.length} flood requests`);
  assert.ok(statuses.filter((x) => x === 429).length > statuses.length / 2);
  assert.deepEqual([...new Set(statuses)].sort(), [401, 429]);
});
