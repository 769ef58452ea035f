// Go, static, PHP and Ruby detection, the order between stacks, and what "not detectable" names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LOOKED_FOR } from '#lib/buildplan/index.js';
import { assertContract, finalStage, indexOf, lines, notDetectable, plan } from './fixtures.js';

test('go: the go directive picks the image, modules download before the sources, distroless runs it', async () => {
  const p = await plan({
    'go.mod': 'module example.com/app\n\ngo 1.22.3\n\nrequire x v1\n',
    'go.sum': '',
    'main.go': 'package main\n',
  });
  assertContract(p);
  assert.deepEqual(p.runtime, { name: 'go', version: '1.22', image: 'golang:1.22-bookworm' });
  assert.deepEqual(p.images, ['golang:1.22-bookworm', 'gcr.io/distroless/static-debian12']);
  assert.deepEqual(p.warnings, []);
  assert.ok(
    indexOf(p.dockerfile, /^COPY go\.mod go\.sum \.\/$/) < indexOf(p.dockerfile, /^RUN go mod download$/),
  );
  assert.ok(indexOf(p.dockerfile, /^RUN go mod download$/) < indexOf(p.dockerfile, /^COPY \. \.$/));
  assert.equal(p.build, "CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/server .");
  assert.deepEqual(finalStage(p.dockerfile), [
    'FROM gcr.io/distroless/static-debian12',
    'COPY --from=build /out/server /server',
    'ENV PORT=8080',
    'USER 65532:65532',
    'EXPOSE 8080',
    'CMD ["/server"]',
  ]);
});

test('go: a main package under cmd/ (the module name wins among several); cgo goes to Debian; a newer directive warns', async () => {
  const tree = {
    'go.mod': 'module example.com/x/api\ngo 1.23\n',
    'cmd/api/main.go': 'package main',
    'cmd/tool/main.go': 'package main',
    'internal/x.go': 'package x',
  };
  const p = await plan(tree);
  assert.match(p.build!, / \.\/cmd\/api$/);
  assert.ok(p.warnings.some((w) => /several main packages/.test(w)));
  assert.ok(lines(p.dockerfile).includes('COPY go.mod ./'), 'no go.sum, so only go.mod');
  const cgo = await plan({
    'go.mod': 'module m\ngo 1.24\nrequire github.com/mattn/go-sqlite3 v1.14.22\n',
    'main.go': 'package main',
  });
  assertContract(cgo);
  assert.equal(finalStage(cgo.dockerfile)[0], 'FROM debian:bookworm-slim');
  assert.match(cgo.build!, /^CGO_ENABLED=1 /);
  const newer = await plan({ 'go.mod': 'module m\ngo 1.99\n', 'main.go': 'package main' });
  assert.equal(newer.runtime.version, '1.25');
  assert.ok(newer.warnings.some((w) => /newer than the supported lines/.test(w)));
  const none = await notDetectable({ 'go.mod': 'module m\ngo 1.22\n', 'lib.go': 'package lib' });
  assert.match(none.message, /no main package/);
});

test('static: index.html at the root or in public/, dotfiles pruned, Caddy as a non-root user', async () => {
  const root = await plan({ 'index.html': '<h1>hi</h1>', 'style.css': '', '.env': 'SECRET=1' });
  assertContract(root);
  assert.equal(root.stack, 'static');
  assert.deepEqual([root.install, root.build, root.port], [null, null, 8080]);
  assert.ok(lines(root.dockerfile).includes('COPY . /out/srv'));
  // Caddy once: a plain copy (without the file capability) in the step that tidies the files, and
  // a distroless final stage holding only the assembled tree.
  const setUp = indexOf(
    root.dockerfile,
    /^RUN .*cp \/usr\/bin\/caddy \/out\/usr\/local\/bin\/caddy .*find \/out\/srv .*-name '\.\*' ! -name \.well-known -prune -exec rm -rf/,
  );
  assert.ok(indexOf(root.dockerfile, /^COPY \. \/out\/srv$/) < setUp && setUp > 0, root.dockerfile);
  assert.deepEqual(root.images, ['caddy:2-alpine', 'gcr.io/distroless/static-debian12']);
  const final = finalStage(root.dockerfile);
  assert.deepEqual(
    [final[0], final[final.length - 1]],
    ['FROM gcr.io/distroless/static-debian12', 'COPY --from=site /out/ /'],
  );
  const pub = await plan({ 'public/index.html': '', 'README.md': '' });
  assert.deepEqual(pub.detected_from, ['public/index.html']);
  assert.ok(lines(pub.dockerfile).includes('COPY public /out/srv'));
});

test('php: composer in its own stage keyed by composer.lock, php-fpm on loopback behind Caddy, www-data', async () => {
  const p = await plan({
    'composer.json': JSON.stringify({ require: { php: '>=8.1', 'ext-intl': '*', 'ext-mbstring': '*' } }),
    'composer.lock': '{}',
    'public/index.php': '',
    artisan: '',
  });
  assertContract(p);
  assert.deepEqual(p.runtime, { name: 'php', version: '8.3', image: 'php:8.3-fpm-bookworm' });
  assert.deepEqual(p.images, ['composer:2', 'caddy:2-alpine', 'php:8.3-fpm-bookworm']);
  assert.deepEqual(p.detected_from, ['composer.json', 'composer.lock', 'public/index.php']);
  assert.ok(
    indexOf(p.dockerfile, /^COPY composer\.json composer\.lock \.\/$/) <
      indexOf(p.dockerfile, /^RUN composer install/),
  );
  assert.ok(indexOf(p.dockerfile, /^RUN composer install/) < indexOf(p.dockerfile, /^COPY \. \.$/));
  assert.ok(
    p.warnings.some(
      (w) => w === 'extensions not in the php image: ext-intl; install them in your own Dockerfile',
    ),
  );
  const final = finalStage(p.dockerfile);
  assert.ok(
    final.some((l) =>
      /'listen = 127\.0\.0\.1:9000' > \/usr\/local\/etc\/php-fpm\.d\/zzz-loopback\.conf/.test(l),
    ),
    'FastCGI never listens beyond loopback',
  );
  assert.ok(final.some((l) => /'  root \* \/app\/public'/.test(l)));
  assert.ok(!final.some((l) => /composer/.test(l)), 'no composer in the final stage');
  assert.ok(final.includes('USER www-data'));
  const rootDoc = await plan({ 'composer.json': '{}', 'index.php': '' });
  assert.match(
    rootDoc.dockerfile,
    /'  @hidden path \/\.\* \/\*\/\.\* \/vendor\/\* \/composer\.json \/composer\.lock'/,
  );
  assert.ok(rootDoc.warnings.some((w) => /no composer\.lock/.test(w)));
});

test('ruby: Rails with bin/rails server; Rack with puma; rackup without it', async () => {
  const lock = (gems: string[]) =>
    `GEM\n  remote: x\n  specs:\n${gems.map((g) => `    ${g} (1.0)\n`).join('')}\nRUBY VERSION\n   ruby 3.2.2p53\n`;
  const rails = await plan({
    Gemfile: "gem 'rails'",
    'Gemfile.lock': lock(['rails', 'pg', 'propshaft']),
    'bin/rails': '',
    'config.ru': '',
  });
  assertContract(rails);
  assert.deepEqual(rails.runtime, { name: 'ruby', version: '3.2', image: 'ruby:3.2-slim-bookworm' });
  assert.equal(rails.start, 'bin/rails server -b 0.0.0.0 -p 3000');
  assert.equal(rails.build, 'SECRET_KEY_BASE_DUMMY=1 bundle exec rails assets:precompile');
  assert.ok(
    indexOf(rails.dockerfile, /^COPY Gemfile Gemfile\.lock \.\/$/) <
      indexOf(rails.dockerfile, /^RUN bundle install$/),
  );
  assert.ok(finalStage(rails.dockerfile).some((l) => /libpq5/.test(l)));
  assert.ok(
    finalStage(rails.dockerfile).some((l) => /^ENV BUNDLE_DEPLOYMENT=1 .*RAILS_ENV=production/.test(l)),
  );
  const rack = await plan({
    Gemfile: '',
    'Gemfile.lock': lock(['puma', 'sinatra']),
    'config.ru': '',
    '.ruby-version': 'ruby-3.3.1\n',
  });
  assertContract(rack);
  assert.equal(rack.start, 'bundle exec puma --bind tcp://0.0.0.0:3000 config.ru');
  assert.equal(rack.runtime.version, '3.3');
  assert.ok(lines(rack.dockerfile).includes('COPY Gemfile Gemfile.lock .ruby-version ./'));
  const rackup = await plan({ Gemfile: "gem 'rack'", 'config.ru': '' });
  assert.match(rackup.start!, /^bundle exec rackup /);
  assert.ok(
    !lines(rackup.dockerfile).some((l) => /BUNDLE_DEPLOYMENT/.test(l)),
    'deployment mode needs a lock file',
  );
});

test('order: a backend beats the package.json it carries for its assets', async () => {
  const pkg = JSON.stringify({
    scripts: { build: 'vite build', dev: 'vite' },
    devDependencies: { vite: '5' },
  });
  assert.equal(
    (await plan({ 'composer.json': '{}', 'public/index.php': '', 'package.json': pkg })).stack,
    'php',
  );
  assert.equal((await plan({ Gemfile: "gem 'puma'", 'config.ru': '', 'package.json': pkg })).stack, 'ruby');
  assert.equal(
    (await plan({ 'requirements.txt': 'gunicorn', 'app.py': '', 'package.json': pkg })).stack,
    'python',
  );
  assert.equal(
    (await plan({ 'go.mod': 'module m\ngo 1.22\n', 'main.go': 'package main', 'package.json': pkg })).stack,
    'go',
  );
  // A Gemfile that starts nothing (a Jekyll site, say) does not hide the files beside it.
  assert.equal((await plan({ Gemfile: "gem 'jekyll'", 'index.html': '' })).stack, 'static');
});

test('nothing recognisable: not_detectable lists every file looked for', async () => {
  const r = await notDetectable({ 'README.md': '# hi', 'src/x.c': '' });
  assert.deepEqual(r.looked_for, LOOKED_FOR);
  assert.deepEqual(LOOKED_FOR, [
    'go.mod',
    'composer.json',
    'Gemfile',
    'requirements.txt',
    'pyproject.toml',
    'Pipfile',
    'package.json',
    'index.html',
    'public/index.html',
  ]);
  assert.match(r.message, /^nothing recognisable: none of go\.mod, .*public\/index\.html found$/);
  const empty = await notDetectable({});
  assert.equal(empty.code, 'not_detectable');
});
