// Delivery authentication per forge: correct signatures pass, and every kind of bad input gives
// the one identical failure value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyDelivery, detectProvider, signBody } from '#lib/webhooks/index.js';
import {
  githubHeaders,
  giteaHeaders,
  forgejoHeaders,
  gitlabHeaders,
  bitbucketHeaders,
  githubPush,
  giteaPush,
  gitlabPush,
  bitbucketPush,
  enc,
} from './_payloads.js';

const SECRET = 'whsec_3q2-7wPq9kV1sYzA0cXbN4uHfLr8tMeDjGiOa6';
const FAIL = { ok: false };

function headers(init: Record<string, string>, extra: [string, string][] = []): Headers {
  const h = new Headers(init);
  for (const [k, v] of extra) h.append(k, v);
  return h;
}

test("GitHub documentation's test vector", () => {
  assert.equal(
    signBody("It's a Secret to Everybody", 'Hello, World!'),
    '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
  );
  const body = enc('Hello, World!');
  const h = headers({
    ...githubHeaders('push'),
    'X-Hub-Signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
  });
  assert.deepEqual(verifyDelivery({ headers: h, body, secret: "It's a Secret to Everybody" }), {
    ok: true,
    provider: 'github',
    event: 'push',
    deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  });
});

const cases = {
  github: () => {
    const body = enc(githubPush('refs/heads/main'));
    return {
      body,
      init: { ...githubHeaders('push'), 'X-Hub-Signature-256': `sha256=${signBody(SECRET, body)}` },
      sigHeader: 'X-Hub-Signature-256',
      prefix: 'sha256=',
    };
  },
  gitea: () => {
    const body = enc(giteaPush('refs/heads/develop'));
    return {
      body,
      init: giteaHeaders('push', signBody(SECRET, body)),
      sigHeader: 'X-Gitea-Signature',
      prefix: '',
    };
  },
  bitbucket: () => {
    const body = enc(
      bitbucketPush([
        {
          next: { type: 'branch', name: 'main', hash: '709d658dc5b6d6afcd46049c2f332ee3f515a67d' },
          prev: { type: 'branch', name: 'main', hash: '1e65c05c1d5171631d92438a13901ca7dae9618c' },
        },
      ]),
    );
    return {
      body,
      init: bitbucketHeaders('repo:push', `sha256=${signBody(SECRET, body)}`),
      sigHeader: 'X-Hub-Signature',
      prefix: 'sha256=',
    };
  },
};

const expected = {
  github: { provider: 'github', event: 'push', deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958' },
  gitea: { provider: 'gitea', event: 'push', deliveryId: 'f6266f16-1bf3-46a5-9ea4-602e06ead473' },
  bitbucket: {
    provider: 'bitbucket',
    event: 'repo:push',
    deliveryId: 'e7a9b1c2-3d4e-4f50-8a6b-7c8d9e0f1a2b',
  },
} as const;

for (const [name, make] of Object.entries(cases) as [
  keyof typeof cases,
  (typeof cases)[keyof typeof cases],
][]) {
  test(`${name}: a correct signature over the raw body passes`, () => {
    const { body, init } = make();
    assert.deepEqual(verifyDelivery({ headers: headers(init), body, secret: SECRET }), {
      ok: true,
      ...expected[name],
    });
  });

  test(`${name}: every bad delivery is the same failure`, () => {
    const { body, init, sigHeader, prefix } = make();
    const good = init[sigHeader as keyof typeof init] as string;
    const hex = good.slice(prefix.length);
    const tampered = new Uint8Array(body);
    tampered[10] ^= 1;
    const bad: [string, ReturnType<typeof verifyDelivery>][] = [
      ['tampered body', verifyDelivery({ headers: headers(init), body: tampered, secret: SECRET })],
      ['wrong secret', verifyDelivery({ headers: headers(init), body, secret: `${SECRET}x` })],
      ['no secret configured', verifyDelivery({ headers: headers(init), body, secret: null })],
      ['empty secret', verifyDelivery({ headers: headers(init), body, secret: '' })],
      [
        'missing signature',
        verifyDelivery({
          headers: headers(
            Object.fromEntries(
              Object.entries(init).filter(
                ([k]) => k !== sigHeader && !(name === 'gitea' && k === 'X-Gogs-Signature'),
              ),
            ),
          ),
          body,
          secret: SECRET,
        }),
      ],
      [
        'short signature',
        verifyDelivery({
          headers: headers({ ...init, [sigHeader]: prefix + hex.slice(0, 62) }),
          body,
          secret: SECRET,
        }),
      ],
      [
        'long signature',
        verifyDelivery({
          headers: headers({ ...init, [sigHeader]: `${prefix + hex}00` }),
          body,
          secret: SECRET,
        }),
      ],
      [
        'non-hex signature',
        verifyDelivery({
          headers: headers({ ...init, [sigHeader]: `${prefix}${'z'.repeat(64)}` }),
          body,
          secret: SECRET,
        }),
      ],
      [
        'base64 signature',
        verifyDelivery({
          headers: headers({ ...init, [sigHeader]: prefix + Buffer.from(hex, 'hex').toString('base64') }),
          body,
          secret: SECRET,
        }),
      ],
      [
        'signature header twice (same value)',
        verifyDelivery({ headers: headers(init, [[sigHeader, good]]), body, secret: SECRET }),
      ],
      [
        'event header twice',
        verifyDelivery({
          headers: headers(init, [
            [
              name === 'bitbucket' ? 'X-Event-Key' : name === 'gitea' ? 'X-Gitea-Event' : 'X-GitHub-Event',
              'push',
            ],
          ]),
          body,
          secret: SECRET,
        }),
      ],
      [
        'delivery id twice',
        verifyDelivery({
          headers: headers(init, [
            [
              name === 'bitbucket'
                ? 'X-Request-UUID'
                : name === 'gitea'
                  ? 'X-Gitea-Delivery'
                  : 'X-GitHub-Delivery',
              'a',
            ],
          ]),
          body,
          secret: SECRET,
        }),
      ],
    ];
    if (prefix)
      bad.push([
        'sha1= prefix',
        verifyDelivery({ headers: headers({ ...init, [sigHeader]: `sha1=${hex}` }), body, secret: SECRET }),
      ]);
    else
      bad.push([
        'sha256= prefix on a bare-hex header',
        verifyDelivery({ headers: headers({ ...init, [sigHeader]: `sha256=${hex}` }), body, secret: SECRET }),
      ]);
    for (const [why, r] of bad) assert.deepEqual(r, FAIL, why);
  });
}

test('gitlab: the token must equal the secret; event and delivery id from its headers', () => {
  const body = enc(gitlabPush('refs/heads/master'));
  assert.deepEqual(
    verifyDelivery({ headers: headers(gitlabHeaders('Push Hook', SECRET)), body, secret: SECRET }),
    {
      ok: true,
      provider: 'gitlab',
      event: 'Push Hook',
      deliveryId: 'f5e5f430-f57b-4e6e-9fac-d9128cd7232f',
    },
  );
  // Idempotency-Key (stable across retries) wins; older GitLab has only X-Gitlab-Event-UUID.
  const init: Record<string, string> = gitlabHeaders('Push Hook', SECRET);
  delete init['Idempotency-Key'];
  assert.deepEqual(verifyDelivery({ headers: headers(init), body, secret: SECRET }), {
    ok: true,
    provider: 'gitlab',
    event: 'Push Hook',
    deliveryId: '9cebe914-4827-408f-b014-cfa23a47a35f',
  });
  delete init['X-Gitlab-Event-UUID'];
  assert.deepEqual(verifyDelivery({ headers: headers(init), body, secret: SECRET }), {
    ok: true,
    provider: 'gitlab',
    event: 'Push Hook',
    deliveryId: null,
  });

  const bad = [
    verifyDelivery({ headers: headers(gitlabHeaders('Push Hook', `${SECRET}x`)), body, secret: SECRET }),
    verifyDelivery({
      headers: headers(gitlabHeaders('Push Hook', SECRET.slice(0, -1))),
      body,
      secret: SECRET,
    }),
    verifyDelivery({ headers: headers(gitlabHeaders('Push Hook', SECRET)), body, secret: null }),
    verifyDelivery({
      headers: headers(gitlabHeaders('Push Hook', SECRET), [['X-Gitlab-Token', SECRET]]),
      body,
      secret: SECRET,
    }),
    verifyDelivery({
      headers: headers(gitlabHeaders('Push Hook', SECRET), [['X-Gitlab-Event', 'Push Hook']]),
      body,
      secret: SECRET,
    }),
    verifyDelivery({
      headers: headers(
        Object.fromEntries(
          Object.entries(gitlabHeaders('Push Hook', SECRET)).filter(([k]) => k !== 'X-Gitlab-Token'),
        ),
      ),
      body,
      secret: SECRET,
    }),
  ];
  for (const r of bad) assert.deepEqual(r, FAIL);
});

test('precedence: Gitea and Forgejo win over the GitHub-compatible headers they also send', () => {
  const body = enc(giteaPush('refs/heads/develop'));
  const sig = signBody(SECRET, body);
  assert.equal(detectProvider(headers(giteaHeaders('push', sig))), 'gitea');
  const fj = verifyDelivery({ headers: headers(forgejoHeaders('push', sig)), body, secret: SECRET });
  assert.deepEqual(fj, {
    ok: true,
    provider: 'gitea',
    event: 'push',
    deliveryId: '0b7d6a5c-7c1f-4a0e-9f0e-3c1d5b0e2a11',
  });
  // A Gitea delivery is judged by X-Gitea-Signature only: a valid GitHub-style signature does not
  // rescue a wrong Gitea one.
  const wrong = { ...giteaHeaders('push', sig), 'X-Gitea-Signature': 'ab'.repeat(32) };
  assert.deepEqual(verifyDelivery({ headers: headers(wrong), body, secret: SECRET }), FAIL);
});

test('unknown or ambiguous provider is the same failure', () => {
  const body = enc(githubPush('refs/heads/main'));
  const sig = `sha256=${signBody(SECRET, body)}`;
  const r = [
    verifyDelivery({
      headers: headers({ 'X-Hub-Signature-256': sig, 'Content-Type': 'application/json' }),
      body,
      secret: SECRET,
    }),
    verifyDelivery({
      headers: headers({
        ...githubHeaders('push'),
        'X-Hub-Signature-256': sig,
        'X-Gitlab-Event': 'Push Hook',
      }),
      body,
      secret: SECRET,
    }),
    verifyDelivery({
      headers: headers({ ...githubHeaders('push'), 'X-Hub-Signature-256': sig, 'X-Event-Key': 'repo:push' }),
      body,
      secret: SECRET,
    }),
    verifyDelivery({ headers: headers({}), body, secret: SECRET }),
    // An event name with characters no forge uses.
    verifyDelivery({
      headers: headers({ ...githubHeaders('push$(id)'), 'X-Hub-Signature-256': sig }),
      body,
      secret: SECRET,
    }),
  ];
  for (const x of r) assert.deepEqual(x, FAIL);
});

test('uppercase hex is the same signature', () => {
  const body = enc(githubPush('refs/heads/main'));
  const h = headers({
    ...githubHeaders('push'),
    'X-Hub-Signature-256': `sha256=${signBody(SECRET, body).toUpperCase()}`,
  });
  assert.equal(verifyDelivery({ headers: h, body, secret: SECRET }).ok, true);
});

// Edges of the header checks, each on its own: what `npm run mutation` showed untested.
test('header edges: anchored event and delivery patterns, lengths, trimming, an empty secret, Forgejo headers alone, Bitbucket Server ids', () => {
  const body = enc(githubPush('refs/heads/main'));
  const sig = `sha256=${signBody(SECRET, body)}`;
  // A plain getter: Headers would trim and join on its own, this passes values as they come.
  const raw = (init: Record<string, string>) => ({
    get: (n: string) => Object.entries(init).find(([k]) => k.toLowerCase() === n)?.[1] ?? null,
  });
  const gh = (over: Record<string, string | undefined>) => {
    const init: Record<string, string> = {
      'X-GitHub-Event': 'push',
      'X-GitHub-Delivery': 'd-1',
      'X-Hub-Signature-256': sig,
    };
    for (const [k, v] of Object.entries(over))
      if (v === undefined) delete init[k];
      else init[k] = v;
    return verifyDelivery({ headers: raw(init), body, secret: SECRET });
  };
  assert.deepEqual(gh({}), { ok: true, provider: 'github', event: 'push', deliveryId: 'd-1' });
  assert.deepEqual(
    gh({ 'X-GitHub-Delivery': undefined }),
    { ok: true, provider: 'github', event: 'push', deliveryId: null },
    'no delivery id is allowed',
  );
  assert.deepEqual(
    gh({ 'X-GitHub-Event': ' push ', 'X-GitHub-Delivery': ' d-1 ' }),
    { ok: true, provider: 'github', event: 'push', deliveryId: 'd-1' },
    'values are trimmed',
  );
  for (const event of ['!push', 'push!', 'x'.repeat(65)])
    assert.deepEqual(gh({ 'X-GitHub-Event': event }), FAIL, event);
  assert.equal(gh({ 'X-GitHub-Event': 'x'.repeat(64) }).ok, true);
  for (const id of ['a b', '!a', 'a!', 'x'.repeat(129)])
    assert.deepEqual(gh({ 'X-GitHub-Delivery': id }), FAIL, id);
  assert.equal(gh({ 'X-GitHub-Delivery': '{a}:b.c_d-e' + 'x'.repeat(117) }).ok, true);
  // A header value over 256 characters is refused; 256 is fine.
  assert.deepEqual(gh({ 'X-Hub-Signature-256': sig + ' '.repeat(256 - sig.length + 1) }), FAIL);
  assert.equal(gh({ 'X-Hub-Signature-256': sig + ' '.repeat(256 - sig.length) }).ok, true);
  // An empty secret is no secret: a signature made with the empty key does not pass.
  assert.deepEqual(
    verifyDelivery({
      headers: raw({ 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${signBody('', body)}` }),
      body,
      secret: '',
    }),
    FAIL,
  );
  // Forgejo's own headers alone make it a Gitea-format delivery, whatever else is claimed.
  assert.equal(detectProvider(raw({ 'X-Forgejo-Event': 'push', 'X-GitHub-Event': 'push' })), 'gitea');
  assert.equal(detectProvider(raw({ 'X-Forgejo-Signature': 'x', 'X-GitHub-Event': 'push' })), 'gitea');
  // Bitbucket Server names the delivery X-Request-Id.
  const bb = enc(bitbucketPush([]));
  const bbSig = `sha256=${signBody(SECRET, bb)}`;
  assert.deepEqual(
    verifyDelivery({
      headers: raw({ 'X-Event-Key': 'repo:refs_changed', 'X-Hub-Signature': bbSig, 'X-Request-Id': 'srv-1' }),
      body: bb,
      secret: SECRET,
    }),
    {
      ok: true,
      provider: 'bitbucket',
      event: 'repo:refs_changed',
      deliveryId: 'srv-1',
    },
  );
});
