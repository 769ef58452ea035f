// The Caddyfile the static and php plans write: only options Caddy 2.6 (Debian bookworm's) accepts,
// since an image map may point caddy:2-alpine at it; tests/engine/stacks.test.ts runs it for real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { caddyfile } from '#lib/buildplan/caddy.js';
import { plan } from './fixtures.js';

test('the generated Caddyfile has only global options Caddy 2.6 knows, admin and automatic HTTPS off', async () => {
  const lines = caddyfile(8080, ['file_server']);
  const global = lines.slice(1, lines.indexOf('}'));
  assert.deepEqual(global, ['  admin off', '  auto_https off']);
  for (const p of [
    await plan({ 'index.html': '' }),
    await plan({ 'composer.json': '{}', 'index.php': '' }),
  ]) {
    assert.doesNotMatch(p.dockerfile, /persist_config/);
    assert.match(p.dockerfile, /'  admin off' '  auto_https off' '}' ':8080 \{'/);
  }
});
