// The dashboard's files over real HTTP: headers, caching, SPA fallback that leaves /api and
// /webhooks to the API, and requests that try to walk out of the build folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { readFile } from 'node:fs/promises';
import { startTestServer, type TestServer } from '../_support/server.js';
import { DEFAULT_DASHBOARD_DIR } from '../../runtime/dashboard.js';
import { join } from 'node:path';

let s: TestServer;
let index: string;

before(async () => {
  s = await startTestServer();
  index = await readFile(join(DEFAULT_DASHBOARD_DIR, 'index.html'), 'utf8');
});
after(() => s?.stop());

/** A request whose path goes on the wire exactly as written (fetch would normalise `..`). */
function raw(
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: s.running.port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

test('GET / answers the page with a strict CSP, no caching, and no inline script', async () => {
  const r = await raw('/');
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^text\/html/);
  assert.equal(r.headers['cache-control'], 'no-cache');
  const csp = String(r.headers['content-security-policy']);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /connect-src 'self'(;|$)/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(r.headers['x-content-type-options'], 'nosniff');
  assert.equal(r.body, index);
  const scripts = [...r.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  assert.ok(scripts.length >= 1, 'the page loads its script');
  for (const [, attrs, body] of scripts) {
    assert.match(attrs!, /\bsrc="\/assets\/[^"]+\.js"/, 'every script is a file under /assets');
    assert.equal(body!.trim(), '', 'no inline script');
  }
});

test('hashed assets are immutable, compressed on request, and revalidate with ETag', async () => {
  const js = /src="(\/assets\/[^"]+\.js)"/.exec(index)![1]!;
  const r = await raw(js, { 'accept-encoding': 'gzip' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.match(String(r.headers['content-type']), /^text\/javascript/);
  assert.equal(r.headers['content-encoding'], 'gzip');
  const etag = String(r.headers.etag);
  const again = await raw(js, { 'if-none-match': etag });
  assert.equal(again.status, 304);
  assert.equal(again.body, '');
  const plain = await raw(js);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.equal(plain.body, await readFile(join(DEFAULT_DASHBOARD_DIR, js.slice(1)), 'utf8'));
});

test('client-side routes get the page; a missing asset or file name is a 404, not the page', async () => {
  for (const p of ['/apps/abc123', '/tokens', '/security', '/login']) {
    const r = await raw(p);
    assert.equal(r.status, 200, p);
    assert.equal(r.body, index, p);
    assert.equal(r.headers['cache-control'], 'no-cache', p);
  }
  for (const p of ['/assets/index-missing.js', '/assets/nothing', '/favicon.ico', '/robots.txt']) {
    const r = await raw(p);
    assert.equal(r.status, 404, p);
    assert.equal(JSON.parse(r.body).code, 'not_found', p);
  }
});

test('the fallback never shadows the API, the webhooks or the metrics endpoint', async () => {
  const api = await raw('/api/no-such-route');
  assert.equal(api.status, 404);
  assert.deepEqual(JSON.parse(api.body), { error: 'No such route', code: 'not_found' });
  for (const p of ['/api', '/api/', '/API/x', '/webhooks', '/webhooks/', '/webhooks/a/b/c']) {
    const r = await raw(p);
    assert.equal(r.status, 404, p);
    assert.match(String(r.headers['content-type']), /json/, p);
  }
  const apps = await raw('/api/apps');
  assert.equal(apps.status, 401);
  assert.equal(JSON.parse(apps.body).code, 'unauthorized');
  const hook = await raw('/webhooks/0123456789abcdef');
  assert.notEqual(hook.body, index);
  assert.match(String(hook.headers['content-type']), /json/);
  const metrics = await raw('/metrics');
  assert.equal(metrics.status, 404);
  assert.notEqual(metrics.body, index);
  // Writes to a page path are not the page either.
  const post = await raw('/', {}, 'POST');
  assert.equal(post.status, 404);
  assert.match(String(post.headers['content-type']), /json/);
});

test('paths that try to leave the build folder never read another file', async () => {
  const pkg = await readFile(new URL('../../../package.json', import.meta.url), 'utf8');
  const server = await readFile(new URL('../../runtime/server.js', import.meta.url), 'utf8');
  const attempts = [
    '/../package.json',
    '/../../package.json',
    '/assets/../../package.json',
    '/assets/../../../package.json',
    '/%2e%2e/%2e%2e/package.json',
    '/%2e%2e%2f%2e%2e%2fpackage.json',
    '/assets/..%2f..%2f..%2fpackage.json',
    '/assets/%2e%2e/%2e%2e/runtime/server.js',
    '/..%5c..%5cpackage.json',
    '/../runtime/server.js',
    '/..%2fruntime%2fserver.js',
    '/assets/../../runtime',
    '//etc/passwd',
    '/%2fetc%2fpasswd',
    '/..%00/package.json',
    '/index.html/../../package.json',
  ];
  for (const p of attempts) {
    const r = await raw(p);
    assert.ok(r.status === 404 || (r.status === 200 && r.body === index), `${p}: ${r.status}`);
    assert.ok(
      !r.body.includes('"devDependencies"') &&
        r.body !== pkg &&
        r.body !== server &&
        !r.body.includes('root:x:0:0'),
      p,
    );
  }
});
