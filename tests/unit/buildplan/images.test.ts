// SVC_IMAGE_MAP over a generated Dockerfile: images swapped in FROM and COPY --from, stage names kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mapDockerfileImages } from '#lib/buildplan/index.js';
import { lines, plan } from './fixtures.js';

test('every image a plan names is mapped in its FROM and COPY --from lines; stage names and the plan are not', async () => {
  const php = await plan({ 'composer.json': '{}', 'public/index.php': '' });
  const map = {
    'composer:2': 'mirror/composer:2',
    'caddy:2-alpine': 'mirror/caddy:2',
    'php:8.3-fpm-bookworm': 'mirror/php:fpm',
    vendor: 'never/used',
  };
  const out = mapDockerfileImages(php.dockerfile, map);
  const froms = lines(out).filter((l) => l.startsWith('FROM '));
  assert.deepEqual(froms, [
    'FROM mirror/composer:2 AS vendor',
    'FROM mirror/caddy:2 AS caddy',
    'FROM mirror/php:fpm',
  ]);
  assert.ok(
    lines(out).includes('COPY --from=vendor --chown=www-data:www-data /app /app'),
    'a stage is not an image, whatever the map says',
  );
  assert.ok(lines(out).includes('COPY --from=caddy /caddy /usr/local/bin/caddy'));
  assert.deepEqual(
    php.images,
    ['composer:2', 'caddy:2-alpine', 'php:8.3-fpm-bookworm'],
    'the plan keeps the official references',
  );
  // Only the image lines change.
  assert.equal(lines(out).length, lines(php.dockerfile).length);
  assert.deepEqual(
    lines(out).filter((l) => !l.startsWith('FROM ')),
    lines(php.dockerfile).filter((l) => !l.startsWith('FROM ')),
  );
  // A COPY --from that names an image (not a stage) is mapped too; unmapped references stay.
  const df =
    'FROM node:22-bookworm-slim AS deps\nCOPY --from=caddy:2-alpine /usr/bin/caddy /caddy\nFROM other:1\n';
  assert.equal(
    mapDockerfileImages(df, { 'caddy:2-alpine': 'x/caddy:2' }),
    'FROM node:22-bookworm-slim AS deps\nCOPY --from=x/caddy:2 /usr/bin/caddy /caddy\nFROM other:1\n',
  );
});
