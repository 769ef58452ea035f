// The Dockerfile parser and the build policy on fixtures, read as an attacker who writes the
// repository would write them: every way to spell "ADD http://127.0.0.1:2019/config/ /leak".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDockerfile, expandWord, UNKNOWN } from '#lib/compose/dockerfile.js';
import { checkDockerfile, checkTriggers } from '#lib/compose/buildpolicy.js';
import { parseCompose } from '#lib/compose/index.js';

const lines = (text: string, args: Record<string, string> = {}) =>
  checkDockerfile(text, args).problems.map((p) => `${p.line}: ${p.message}`);
const refusedAt = (text: string, args: Record<string, string> = {}) => [
  ...new Set(checkDockerfile(text, args).problems.map((p) => p.line)),
];

test('parser: directives, continuations with either escape, comments and empty lines inside them, flags, JSON and shell forms', () => {
  const p = parseDockerfile(
    [
      '# syntax=docker/dockerfile:1',
      '# escape=`',
      '',
      'from --platform=linux/amd64 alpine AS build',
      'RUN echo a `',
      '  # a comment inside the continuation',
      '',
      '  && echo b',
      'copy ["a b", "/x"]',
      '# escape=\\',
      'RUN --mount=type=cache,target=/root/.cache --network=none make',
    ].join('\r\n'),
  );
  assert.deepEqual(p.directives, { escape: '`', syntax: 'docker/dockerfile:1' });
  assert.deepEqual(
    p.instructions.map((i) => [i.line, i.keyword, i.flags, i.rest, i.json]),
    [
      [4, 'FROM', [{ name: 'platform', value: 'linux/amd64' }], 'alpine AS build', null],
      [5, 'RUN', [], 'echo a   && echo b', null],
      [9, 'COPY', [], '["a b", "/x"]', ['a b', '/x']],
      [
        11,
        'RUN',
        [
          { name: 'mount', value: 'type=cache,target=/root/.cache' },
          { name: 'network', value: 'none' },
        ],
        'make',
        null,
      ],
    ],
  );
  // A directive after the first instruction is a comment; a directive-looking line after a blank line too.
  assert.equal(parseDockerfile('\n# escape=`\nRUN a `\nb').directives.escape, '\\');
  assert.equal(parseDockerfile('# escape=x\nFROM a').errors.length, 1);
});

test('parser: heredocs are read as bodies (<<EOF, <<-EOF, quoted names, several per line), or as lines when asked', () => {
  const text = [
    'FROM alpine',
    'RUN <<EOF',
    'ADD http://127.0.0.1/x /y',
    'EOF',
    'COPY <<-"ONE" <<TWO /dst/',
    '\tbody one',
    '\tONE',
    'body two',
    'TWO',
    'CMD ["x"]',
  ].join('\n');
  const p = parseDockerfile(text);
  assert.deepEqual(
    p.instructions.map((i) => i.keyword),
    ['FROM', 'RUN', 'COPY', 'CMD'],
  );
  assert.deepEqual(p.instructions[1]!.heredocs, [
    { name: 'EOF', line: 3, body: 'ADD http://127.0.0.1/x /y' },
  ]);
  assert.deepEqual(
    p.instructions[2]!.heredocs.map((h) => [h.name, h.body]),
    [
      ['ONE', '\tbody one'],
      ['TWO', 'body two'],
    ],
  );
  assert.deepEqual(
    parseDockerfile(text, { heredocs: false }).instructions.map((i) => i.keyword),
    ['FROM', 'RUN', 'ADD', 'EOF', 'COPY', 'BODY', 'ONE', 'BODY', 'TWO', 'CMD'],
  );
  assert.match(parseDockerfile('FROM a\nRUN <<EOF\necho').errors[0]!.message, /unterminated heredoc/);
});

test('expandWord: variables, defaults, quotes and escapes as the builder expands them; unknown stays unknown', () => {
  const env: Record<string, string> = { A: 'http', EMPTY: '' };
  const look = (n: string) => (n === 'BASE' ? UNKNOWN : env[n]);
  const v = (w: string, esc = '\\') => {
    const e = expandWord(w, look, esc);
    return e.ok ? e.value : `?${e.unknown.join(',')}${e.error ? `!${e.error}` : ''}`;
  };
  assert.equal(v('$A://x'), 'http://x');
  assert.equal(v('${A}s://x'), 'https://x');
  assert.equal(v('${NOPE:-http}://x'), 'http://x');
  assert.equal(v('${EMPTY:-h}${EMPTY-t}'), 'h');
  assert.equal(v('${A:+ftp}'), 'ftp');
  assert.equal(v('"ht"\'tp\':\\/\\/x'), 'http://x');
  assert.equal(v('h\\ttp'), 'http');
  assert.equal(v('h`ttp', '`'), 'http');
  assert.equal(v("'$A'"), '$A');
  assert.equal(v('"$A"'), 'http');
  assert.equal(v('$BASE'), '?BASE');
  assert.equal(v('${NOPE:-$BASE}'), '?BASE');
  assert.equal(v('${A#h}'), '?A!unsupported substitution ${A#...}');
  assert.equal(v('"open'), '?!unterminated double quote');
});

const REFUSED_ADD: [string, string][] = [
  ['plain URL', 'ADD http://127.0.0.1:2019/config/ /leak'],
  ['https', 'ADD https://169.254.169.254/latest/meta-data/ /leak'],
  ['ftp', 'ADD ftp://127.0.0.1/x /leak'],
  ['upper-case scheme and keyword', 'add HTTP://127.0.0.1/x /leak'],
  ['JSON form', 'ADD ["http://127.0.0.1/x", "/leak"]'],
  ['quoted', 'ADD "http://127.0.0.1/x" /leak'],
  ['escaped letters', 'ADD h\\ttp://127.0.0.1/x /leak'],
  ['second source', 'ADD ./local http://127.0.0.1/x /dir/'],
  ['flags first', 'ADD --chown=1:1 --chmod=644 http://127.0.0.1/x /leak'],
  [
    'checksum',
    'ADD --checksum=sha256:0000000000000000000000000000000000000000000000000000000000000000 http://127.0.0.1/x /leak',
  ],
  ['git ssh', 'ADD git@github.com:moby/buildkit.git /src'],
  ['git https', 'ADD https://github.com/moby/buildkit.git#v0.10.1 /src'],
  ['keep-git-dir', 'ADD --keep-git-dir=true git@host:repo /src'],
  ['git protocol', 'ADD git://127.0.0.1/repo /src'],
];

for (const [name, line] of REFUSED_ADD) {
  test(`policy: remote ADD is refused (${name})`, () => {
    const problems = lines(`FROM alpine\n${line}\n`);
    assert.ok(problems.length >= 1, name);
    assert.ok(
      problems.every((p) => p.startsWith('2: ')),
      problems.join('\n'),
    );
    assert.match(problems.join('\n'), /ADD (from a URL|from a git repository|--checksum|--keep-git-dir)/);
  });
}

test('policy: a URL split over continuation lines, hidden after a comment line, or behind an ONBUILD is found on its first line', () => {
  assert.deepEqual(
    refusedAt('FROM alpine\nRUN true\nADD http://127.0.0.1\\\n# hidden\n:2019/config/ /leak\n'),
    [3],
  );
  assert.deepEqual(refusedAt('# escape=`\nFROM alpine\nADD http://127.0.0.1`\n:2019/ /leak\n'), [3]);
  assert.deepEqual(refusedAt('FROM alpine AS a\nONBUILD ADD http://127.0.0.1/x /leak\nFROM a\n'), [2]);
  assert.deepEqual(refusedAt('FROM alpine\nonbuild  add  ["https://127.0.0.1/x","/y"]\n'), [2]);
});

test('policy: a heredoc body counts as lines too (builders without heredocs read them as instructions)', () => {
  const problems = lines('FROM alpine\nRUN <<EOF\nADD http://127.0.0.1:2019/config/ /leak\nEOF\n');
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^3: ADD from a URL is not allowed .*without heredocs/);
  // With `# escape=` a builder that ignores the directive joins lines differently: both readings must pass.
  const joined = lines('# escape=`\nFROM alpine\nRUN echo `\nADD http://127.0.0.1/ /leak\n');
  assert.equal(joined.length, 1);
  assert.match(joined[0]!, /^4: ADD from a URL is not allowed .*default escape character/);
});

test('policy: variables in ADD sources resolve through ENV and ARG, or the line is refused', () => {
  // Resolved to a URL through an ARG default, a build arg the product passes, or ENV.
  assert.deepEqual(refusedAt('FROM scratch\nARG U=http://127.0.0.1/x\nADD $U /leak\n'), [3]);
  assert.deepEqual(refusedAt('FROM scratch\nARG U=./ok\nADD ${U} /leak\n', { U: 'http://127.0.0.1/x' }), [3]);
  assert.deepEqual(refusedAt('ARG H=127.0.0.1\nFROM alpine\nARG H\nENV U=http://$H/x\nADD $U /leak\n'), [5]);
  assert.deepEqual(refusedAt('FROM alpine\nENV S=http\nADD ${S}://127.0.0.1/ /leak\n'), [3]);
  // A stage that starts from an image: its environment (unseen) wins over an ARG, so an ARG alone fixes nothing.
  assert.match(
    lines('FROM alpine\nARG SRC=./dist\nADD $SRC /app\n').join('\n'),
    /^3: ADD source "\$SRC" depends on \$SRC, which the build cannot fix/,
  );
  assert.deepEqual(refusedAt('FROM alpine\nADD ${UNSET}http://127.0.0.1/ /leak\n'), [2]);
  // Fixed by this Dockerfile: allowed.
  assert.deepEqual(lines('FROM scratch\nARG SRC=./dist\nADD $SRC /app\n'), []);
  assert.deepEqual(lines('FROM alpine\nENV SRC=dist\nADD ${SRC}/app.tar.gz /app/\n'), []);
  assert.deepEqual(lines('FROM alpine AS base\nENV D=dist\nFROM base\nADD $D /app\n'), []);
  // COPY never fetches: a variable it cannot resolve is left to the builder.
  assert.deepEqual(lines('FROM alpine\nARG BIN\nCOPY ${BIN} /usr/bin/\n'), []);
});

test('policy: sources that leave the build context are refused; absolute ones are context-relative and fine', () => {
  assert.deepEqual(refusedAt('FROM alpine\nCOPY ../secret /x\n'), [2]);
  assert.deepEqual(refusedAt('FROM alpine\nCOPY ./a/../../b /x\n'), [2]);
  assert.deepEqual(refusedAt('FROM alpine\nADD ["sub/../../etc", "/x"]\n'), [2]);
  assert.deepEqual(
    lines('FROM alpine\nCOPY /etc/passwd /x\nADD /app.tar.gz /\nCOPY --from=build /src/../out /y\n'),
    [],
  );
});

test('policy: RUN flags that reach the host are refused; cache, tmpfs and stage mounts are fine', () => {
  const run = (flags: string) => lines(`FROM alpine AS build\nRUN true\nFROM alpine\nRUN ${flags} make\n`);
  for (const [flags, reason] of [
    ['--network=host', /--network=host is not allowed/],
    ['--network=bridge0', /only default and none/],
    ['--security=insecure', /--security=insecure is not allowed/],
    ['--mount=type=ssh', /type=ssh is not allowed/],
    ['--mount=type=secret,id=aws,target=/root/.aws/credentials', /type=secret is not allowed/],
    ['--mount=type=bind,from=otherctx,target=/x', /only an earlier stage/],
    ['--mount=type=bind,source=../..,target=/x', /leaves the build context/],
    ['--mount=type=$T,target=/x', /uses a variable/],
    ['--mount=type=devices', /type "devices" is not allowed/],
    ['--privileged', /unknown flag --privileged for RUN/],
  ] as const) {
    const p = run(flags);
    assert.equal(p.length, 1, `${flags}: ${p.join('\n')}`);
    assert.match(p[0]!, reason);
    assert.ok(p[0]!.startsWith('4: '));
  }
  for (const ok of [
    '--network=none',
    '--network=default',
    '--mount=type=cache,target=/root/.cache',
    '--mount=type=tmpfs,target=/tmp',
    '--mount=type=bind,from=build,source=/out,target=/in',
    '--mount=type=bind,from=0,target=/in',
    '--mount=target=/src',
  ])
    assert.deepEqual(run(ok), [], ok);
});

test('policy: the syntax directive may name the official frontend only; unknown instructions and flags are refused', () => {
  for (const ok of [
    'docker/dockerfile:1',
    'docker/dockerfile:1.7-labs',
    'docker.io/docker/dockerfile:1@sha256:' + 'a'.repeat(64),
  ])
    assert.deepEqual(lines(`# syntax=${ok}\nFROM alpine\n`), [], ok);
  assert.match(
    lines('# syntax=evil.example/frontend:latest\nFROM alpine\n')[0]!,
    /^1: the syntax directive "evil\.example\/frontend:latest" names a custom frontend/,
  );
  assert.match(lines('FROM alpine\nFETCH http://x /y\n')[0]!, /^2: unknown instruction FETCH/);
  assert.match(lines('FROM --network=host alpine\n')[0]!, /^1: unknown flag --network for FROM/);
});

test('policy: an ordinary multi-stage Dockerfile passes, and the external images it starts from are listed', () => {
  const text = [
    '# syntax=docker/dockerfile:1',
    'ARG NODE=20',
    'FROM node:${NODE}-alpine AS deps',
    'WORKDIR /app',
    'COPY package.json package-lock.json ./',
    'RUN --mount=type=cache,target=/root/.npm npm ci',
    'FROM deps AS build',
    'COPY . .',
    'RUN <<EOF',
    'npm run build',
    'add http://not-an-instruction/ here',
    'EOF',
    'FROM scratch AS assets',
    'COPY --from=build /app/dist /dist',
    'FROM nginx:alpine',
    'ENV PORT=8080',
    'COPY --from=assets /dist /usr/share/nginx/html',
    'COPY <<EOF /etc/nginx/conf.d/x.conf',
    'server { listen 8080; }',
    'EOF',
    'ADD site.tar.gz /usr/share/nginx/',
    'HEALTHCHECK --interval=5s CMD wget -q -O- http://localhost:8080/ || exit 1',
    'CMD ["nginx", "-g", "daemon off;"]',
  ].join('\n');
  const r = checkDockerfile(text, { NODE: '22' });
  // The heredoc line that a builder without heredocs would read as ADD is the only finding.
  assert.deepEqual(
    r.problems.map((p) => p.line),
    [11],
  );
  assert.deepEqual(r.bases, [
    { line: 3, image: 'node:22-alpine', platform: null },
    { line: 15, image: 'nginx:alpine', platform: null },
  ]);
  assert.deepEqual(checkDockerfile(text.replace('add http://not-an-instruction/ here\n', '')).problems, []);
});

test('policy: a URL in a refusal shows no credentials', () => {
  const p = lines('FROM alpine\nADD https://user:s3cret@example.com/x /y\n');
  assert.equal(p.length, 1);
  assert.ok(!p[0]!.includes('s3cret'), p[0]);
  assert.match(p[0]!, /https:\/\/\*\*\*@example\.com\/x/);
});

test("checkTriggers: a base image's ONBUILD triggers pass the same policy", () => {
  assert.deepEqual(checkTriggers(['RUN make', 'COPY . /src']), []);
  const out = checkTriggers(['ADD http://127.0.0.1:2019/config/ /leak', 'RUN --network=host true']);
  assert.equal(out.length, 2);
  assert.match(
    out[0]!,
    /^ONBUILD ADD http:\/\/127\.0\.0\.1:2019\/config\/ \/leak: ADD from a URL is not allowed/,
  );
  assert.match(out[1]!, /--network=host is not allowed/);
});

test('compose: a build whose dockerfile or context is a URL is refused before any Dockerfile is read', () => {
  for (const [build, key] of [
    ['{ context: ., dockerfile: "https://127.0.0.1:2019/config/" }', 'build.dockerfile'],
    ['{ context: ., dockerfile: "git@host:x/Dockerfile" }', 'build.dockerfile'],
    ['"https://127.0.0.1/repo.git#main"', 'build.context'],
  ]) {
    const r = parseCompose(`services:\n  app:\n    build: ${build}\n`);
    const e = r.findings.find((f) => f.level === 'error' && f.key === key);
    assert.match(e?.message ?? '', /(a Dockerfile from a URL|remote build contexts) (is|are) refused/, build);
  }
});
