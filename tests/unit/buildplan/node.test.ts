// Node detection: package manager from the lock file, version sources, how the app starts, and
// front-end builds that become static sites.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertContract, finalStage, indexOf, lines, plan } from './fixtures.js';

const pkg = (o: object) => JSON.stringify(o);
const server = pkg({ scripts: { start: 'node server.js' } });

test('npm with package-lock.json and a build: npm ci keyed by the manifests, pruned apart, node as the user', async () => {
  const p = await plan({
    'package.json': pkg({ scripts: { start: 'node server.js', build: 'tsc' } }),
    'package-lock.json': '{}',
    'server.js': '',
  });
  assertContract(p);
  assert.equal(p.stack, 'node');
  assert.deepEqual(p.detected_from, ['package.json', 'package-lock.json']);
  assert.deepEqual(p.runtime, { name: 'node', version: '22', image: 'node:22-bookworm-slim' });
  assert.deepEqual(
    [p.install, p.build, p.start, p.port],
    ['npm ci', 'npm run build', 'node server.js', 3000],
  );
  assert.deepEqual(p.warnings, []);
  // The pruned dependencies come from a stage that sees the manifests only, so a source change
  // rebuilds neither the install nor the prune; the build's own node_modules stays behind.
  const all = lines(p.dockerfile);
  assert.ok(all.indexOf('COPY package.json package-lock.json ./') < all.indexOf('RUN npm ci'));
  assert.ok(all.indexOf('RUN npm ci') < all.indexOf('COPY . .'));
  assert.deepEqual(all.slice(all.indexOf('FROM deps AS prod'), all.indexOf('FROM deps AS prod') + 2), [
    'FROM deps AS prod',
    'RUN npm prune --omit=dev',
  ]);
  assert.ok(all.indexOf('RUN npm run build') < all.indexOf('RUN rm -rf node_modules'));
  assert.deepEqual(finalStage(p.dockerfile), [
    'FROM node:22-bookworm-slim',
    'WORKDIR /app',
    'ENV NODE_ENV=production PORT=3000',
    'USER node',
    'EXPOSE 3000',
    'CMD ["node","server.js"]',
    'COPY --from=prod --chown=node:node /app ./',
    'COPY --from=build --chown=node:node /app ./',
  ]);
});

test('npm with nothing to build: production dependencies only, installed once, the source copied after them', async () => {
  const p = await plan({ 'package.json': server, 'package-lock.json': '{}', 'server.js': '' });
  assertContract(p);
  assert.equal(p.install, 'npm ci --omit=dev');
  assert.ok(!lines(p.dockerfile).some((l) => /prune|AS build|AS prod/.test(l)), p.dockerfile);
  assert.deepEqual(finalStage(p.dockerfile), [
    'FROM node:22-bookworm-slim',
    'WORKDIR /app',
    'ENV NODE_ENV=production PORT=3000',
    'USER node',
    'EXPOSE 3000',
    'CMD ["node","server.js"]',
    // Settings first: a source change rebuilds this last copy only.
    'COPY --from=deps --chown=node:node /app ./',
    'COPY --chown=node:node . .',
  ]);
  // The package's own install scripts (husky in prepare) may need dev dependencies: all, then pruned.
  const husky = await plan({
    'package.json': pkg({ scripts: { start: 'node s.js', prepare: 'husky' } }),
    'package-lock.json': '{}',
  });
  assert.equal(husky.install, 'npm ci');
  assert.ok(
    lines(husky.dockerfile).indexOf('RUN npm ci') <
      lines(husky.dockerfile).indexOf('RUN npm prune --omit=dev'),
  );
});

test('pnpm and yarn (classic and berry) from their lock files, through corepack', async () => {
  const cases: [Record<string, string>, string, string][] = [
    [
      { 'pnpm-lock.yaml': '' },
      'pnpm install --frozen-lockfile --prod',
      'COPY package.json pnpm-lock.yaml ./',
    ],
    [{ 'yarn.lock': '' }, 'yarn install --frozen-lockfile --production', 'COPY package.json yarn.lock ./'],
    [
      { 'yarn.lock': '', '.yarnrc.yml': 'nodeLinker: node-modules' },
      'yarn install --immutable',
      'COPY package.json yarn.lock .yarnrc.yml ./',
    ],
  ];
  for (const [extra, install, copy] of cases) {
    const p = await plan({ 'package.json': server, 'server.js': '', ...extra });
    assertContract(p);
    assert.equal(p.install, install);
    assert.ok(lines(p.dockerfile).includes(copy), p.dockerfile);
    assert.ok(lines(p.dockerfile).includes('RUN corepack enable'));
    assert.ok(
      indexOf(p.dockerfile, /^RUN corepack enable/) < indexOf(p.dockerfile, /^COPY package\.json/),
      'corepack is set up before the manifests, so it stays cached',
    );
  }
  const berry = await plan({
    'package.json': pkg({ scripts: { start: 'node s.js' }, packageManager: 'yarn@4.1.0' }),
    'yarn.lock': '',
  });
  assert.equal(berry.install, 'yarn install --immutable');
  assert.ok(berry.warnings.some((w) => /dev dependencies are not pruned/.test(w)));
});

test('no lock file: npm install, with a warning', async () => {
  const p = await plan({ 'package.json': server, 'server.js': '' });
  assert.equal(p.install, 'npm install --omit=dev');
  assert.deepEqual(p.warnings, ['no lock file: dependencies are resolved afresh on every build']);
});

test('version: .nvmrc, then .node-version, then engines.node', async () => {
  const engines = pkg({ scripts: { start: 'node s.js' }, engines: { node: '^20.1' } });
  const a = await plan({ 'package.json': engines, 'package-lock.json': '', '.nvmrc': '18\n' });
  assert.equal(a.runtime.version, '18');
  assert.deepEqual(a.detected_from, ['package.json', 'package-lock.json', '.nvmrc']);
  assert.deepEqual(a.warnings, []);
  const b = await plan({ 'package.json': engines, 'package-lock.json': '', '.node-version': 'v24' });
  assert.equal(b.runtime.version, '24');
  const c = await plan({ 'package.json': engines, 'package-lock.json': '' });
  assert.equal(c.runtime.version, '20');
  assert.deepEqual(c.warnings, ['node version "^20.1" (package.json) reduced to the node 20 image']);
  assert.ok(lines(c.dockerfile).includes('FROM node:20-bookworm-slim AS deps'));
});

test('start: plain words run directly (node_modules/.bin on PATH), shell syntax through npm', async () => {
  const next = await plan({
    'package.json': pkg({ scripts: { build: 'next build', start: 'next start' } }),
    'package-lock.json': '',
  });
  assert.equal(next.stack, 'node');
  assert.ok(lines(next.dockerfile).includes('CMD ["next","start"]'));
  assert.ok(
    lines(next.dockerfile).includes('ENV NODE_ENV=production PORT=3000 PATH=/app/node_modules/.bin:$PATH'),
  );
  const shell = await plan({
    'package.json': pkg({ scripts: { start: 'NODE_ENV=production node "dist/main.js"' } }),
    'package-lock.json': '',
  });
  assert.ok(lines(shell.dockerfile).includes('CMD ["npm","run","start"]'));
  assert.equal(shell.start, 'npm run start');
  assert.ok(shell.warnings.some((w) => /needs a shell/.test(w)));
});

test('start: the main file, or a conventional entry file, when there is no start script', async () => {
  const main = await plan({ 'package.json': pkg({ main: 'lib/app.js' }), 'lib/app.js': '' });
  assert.equal(main.start, 'node lib/app.js');
  const built = await plan({ 'package.json': pkg({ main: 'dist/index.js', scripts: { build: 'tsc' } }) });
  assert.equal(built.start, 'node dist/index.js', 'a main written by the build need not exist yet');
  const conventional = await plan({ 'package.json': pkg({ main: 'missing.js' }), 'index.js': '' });
  assert.equal(conventional.start, 'node index.js');
});

test('front-end builds become static sites served by Caddy, from the tool output folder', async () => {
  const cases: [object, string][] = [
    [{ scripts: { dev: 'vite', build: 'vite build' }, devDependencies: { vite: '5' } }, 'dist'],
    [
      {
        scripts: { start: 'react-scripts start', build: 'react-scripts build' },
        dependencies: { 'react-scripts': '5' },
      },
      'build',
    ],
    [
      {
        scripts: { dev: 'astro dev', start: 'astro dev', build: 'astro build' },
        dependencies: { astro: '4' },
      },
      'dist',
    ],
    [
      { scripts: { build: 'vite build' }, devDependencies: { vite: '5', '@sveltejs/adapter-static': '3' } },
      'build',
    ],
    [{ scripts: { build: 'gatsby build' }, dependencies: { gatsby: '5' } }, 'public'],
  ];
  for (const [json, dir] of cases) {
    const p = await plan({ 'package.json': pkg(json), 'package-lock.json': '' });
    assertContract(p);
    assert.equal(p.stack, 'static', JSON.stringify(json));
    assert.deepEqual(p.runtime, { name: 'caddy', version: '2', image: 'caddy:2-alpine' });
    assert.deepEqual(p.images, [
      'node:22-bookworm-slim',
      'caddy:2-alpine',
      'gcr.io/distroless/static-debian12',
    ]);
    assert.equal(p.port, 8080);
    assert.ok(lines(p.dockerfile).includes(`COPY --from=build /app/${dir} /out/srv`), p.dockerfile);
    const final = finalStage(p.dockerfile);
    assert.equal(final[0], 'FROM gcr.io/distroless/static-debian12');
    assert.equal(final[final.length - 1], 'COPY --from=site /out/ /');
    assert.ok(final.includes('USER 65532:65532'));
    assert.ok(!final.some((l) => /npm|node/.test(l)), 'no node tooling in the final stage');
    assert.match(p.dockerfile, /try_files \{path\} \{path\}\/ \/index\.html/);
  }
});

test('an Astro server (node adapter) stays a node app; an unknown build tool is served from dist with a warning', async () => {
  const astro = await plan({
    'package.json': pkg({
      scripts: { build: 'astro build', start: 'node ./dist/server/entry.mjs' },
      dependencies: { astro: '4', '@astrojs/node': '8' },
    }),
    'package-lock.json': '',
  });
  assert.equal(astro.stack, 'node');
  assert.equal(astro.start, 'node ./dist/server/entry.mjs');
  const unknown = await plan({
    'package.json': pkg({ scripts: { build: 'make-site' } }),
    'package-lock.json': '',
  });
  assert.equal(unknown.stack, 'static');
  assert.ok(unknown.warnings.some((w) => /not a known front-end tool/.test(w)));
});

test('workspaces: the install needs every package.json, so it runs after the whole copy', async () => {
  const p = await plan({
    'package.json': pkg({ workspaces: ['packages/*'], scripts: { start: 'node s.js' } }),
    'package-lock.json': '',
  });
  assertContract(p);
  assert.ok(p.warnings.some((w) => /workspaces/.test(w)));
  assert.ok(indexOf(p.dockerfile, /^COPY \. \.$/) < indexOf(p.dockerfile, /^RUN npm ci$/));
});

test('a package.json with nothing to run falls through to the static files beside it', async () => {
  const p = await plan({
    'package.json': pkg({ devDependencies: { prettier: '3' } }),
    'index.html': '<p>hi</p>',
  });
  assert.equal(p.stack, 'static');
  assert.deepEqual(p.detected_from, ['index.html']);
});
