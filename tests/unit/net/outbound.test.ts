// The outbound guard: every refused range, IPv4-mapped/NAT64 forms, DNS rebinding, redirects,
// a server that never answers and one that streams 10 MB, against a real local HTTPS receiver.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkOutboundUrl,
  postJson,
  refusalOf,
  OutboundRefused,
  OUTBOUND_MAX_BYTES,
  OUTBOUND_TIMEOUT_MS,
  type ResolvedAddress,
} from '#lib/net/outbound.js';
import { startReceiver, receiverResolve, RECEIVER_HOST, type Receiver } from '../../_support/receiver.js';

let recv: Receiver;
before(async () => {
  recv = await startReceiver();
});
after(async () => {
  await recv.close();
});

const REFUSED = [
  '127.0.0.1',
  '127.255.0.9',
  '10.1.2.3',
  '172.16.0.1',
  '172.31.255.254',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.0.1',
  '100.64.0.1',
  '100.127.255.254',
  '224.0.0.1',
  '239.255.255.250',
  '0.0.0.0',
  '0.1.2.3',
  '255.255.255.255',
  '240.0.0.1',
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9',
  '198.18.0.1',
  '192.0.0.8',
  '::1',
  '::',
  'fc00::1',
  'fd12:3456::1',
  'fe80::1',
  'ff02::1',
  'fec0::1',
  '2001:db8::1',
  '2001::1',
  '2002:7f00:1::1',
  '100::1',
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '::ffff:192.168.0.1',
  '::ffff:0:7f00:1',
  '64:ff9b::7f00:1',
  '64:ff9b::a9fe:a9fe',
  '64:ff9b::a00:1',
  '64:ff9b:1::a00:1',
  '::127.0.0.1',
];
const ACCEPTED = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.215.14',
  '2606:4700:4700::1111',
  '2a00:1450:4001::200e',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
];

test('every special-purpose address is refused, global unicast is not', () => {
  for (const a of REFUSED) assert.ok(refusalOf(a), `${a} must be refused`);
  for (const a of ACCEPTED) assert.equal(refusalOf(a), null, `${a} must be accepted`);
});

test('URLs: https only, IP literals in any spelling, names resolving anywhere private', async () => {
  const refuse = async (url: string, resolve?: (h: string) => Promise<ResolvedAddress[]>, match?: RegExp) => {
    await assert.rejects(
      checkOutboundUrl(url, { resolve }),
      (e: unknown) => e instanceof OutboundRefused && (!match || match.test(e.reason)),
      url,
    );
  };
  const pub = async () => [{ address: '8.8.8.8', family: 4 as const }];
  await refuse('http://hooks.example.com/x', pub, /https/);
  await refuse('ftp://hooks.example.com/x', pub, /https/);
  await refuse('https://user:pw@hooks.example.com/x', pub, /credentials/);
  await refuse('not a url');
  for (const literal of [
    'https://127.0.0.1/',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://169.254.169.254/latest/meta-data/',
  ]) {
    await refuse(literal, undefined);
  }
  await refuse(
    'https://evil.example/',
    async () => [{ address: '127.0.0.1', family: 4 }],
    /resolves to 127\.0\.0\.1 is a loopback/,
  );
  // One bad address among good ones is enough: the connection could pick either.
  await refuse(
    'https://evil.example/',
    async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '10.0.0.5', family: 4 },
    ],
    /private/,
  );
  await refuse(
    'https://nowhere.invalid/',
    async () => {
      throw Object.assign(new Error('x'), { code: 'ENOTFOUND' });
    },
    /does not resolve/,
  );
  const ok = await checkOutboundUrl('https://hooks.example.com/x', { resolve: pub });
  assert.equal(ok.address.address, '8.8.8.8');
});

test('SVC_NOTIFY_ALLOW exempts listed addresses and CIDRs only', async () => {
  const loop = async () => [{ address: '127.0.0.1', family: 4 as const }];
  await checkOutboundUrl('https://chat.lan/', { resolve: loop, allow: ['127.0.0.0/8'] });
  await checkOutboundUrl('http://chat.lan/', { resolve: loop, allow: ['127.0.0.1'] });
  await assert.rejects(
    checkOutboundUrl('https://chat.lan/', { resolve: loop, allow: ['10.0.0.0/8'] }),
    OutboundRefused,
  );
  await assert.rejects(
    checkOutboundUrl('http://chat.example/', {
      resolve: async () => [{ address: '8.8.8.8', family: 4 }],
      allow: ['127.0.0.1'],
    }),
    /https/,
  );
});

test('a request reaches the checked address with the name as SNI and Host', async () => {
  recv.script = [204];
  const before = recv.received.length;
  const r = await postJson(
    recv.url('/hook?x=1'),
    { hello: 'world' },
    { resolve: receiverResolve, allow: ['127.0.0.1'], agent: recv.agent },
  );
  assert.equal(r.status, 204);
  const got = recv.received[before]!;
  assert.deepEqual(got.json, { hello: 'world' });
  assert.equal(got.path, '/hook?x=1');
  assert.equal(got.host, `${RECEIVER_HOST}:${recv.port}`);
  assert.equal(got.servername, RECEIVER_HOST);
});

test('DNS rebinding: the name is resolved once; a later loopback answer is never used', async () => {
  const before = recv.received.length;
  // Public first, loopback afterwards: a client that looks up again when connecting would land on the receiver.
  let calls = 0;
  // 8.8.8.8 may be unreachable from here: either way the request fails, and must not land on loopback.
  const publicThenLoop = async (): Promise<ResolvedAddress[]> =>
    ++calls === 1 ? [{ address: '8.8.8.8', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
  const r = await postJson(
    recv.url(),
    { x: 1 },
    { resolve: publicThenLoop, agent: recv.agent, timeoutMs: 1500 },
  ).then(
    (v) => ({ ok: true as const, v }),
    (e: Error) => ({ ok: false as const, e }),
  );
  assert.equal(calls, 1, 'resolved exactly once');
  assert.equal(recv.received.length, before, 'the loopback receiver was never reached');
  assert.equal(r.ok, false, 'the public address (not the receiver) was the only target');

  // Same with an exempted first answer: the connection goes where the check looked.
  calls = 0;
  const allowedThenOther = async (): Promise<ResolvedAddress[]> =>
    ++calls === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '127.0.0.2', family: 4 }];
  const ok = await postJson(
    recv.url(),
    { x: 2 },
    { resolve: allowedThenOther, allow: ['127.0.0.1'], agent: recv.agent },
  );
  assert.equal(ok.status, 204);
  assert.equal(calls, 1);
});

test('a redirect is answered as a status, never followed', async () => {
  recv.script = ['redirect'];
  const before = recv.received.length;
  const r = await postJson(
    recv.url(),
    { x: 1 },
    { resolve: receiverResolve, allow: ['127.0.0.1'], agent: recv.agent },
  );
  assert.equal(r.status, 302);
  assert.equal(recv.received.length, before + 1, 'one request, no second one to the Location');
});

test('a server that never answers fails after the 5 s limit', async () => {
  assert.equal(OUTBOUND_TIMEOUT_MS, 5000);
  recv.script = ['slow'];
  await assert.rejects(
    postJson(recv.url(), { x: 1 }, { resolve: receiverResolve, allow: ['127.0.0.1'], agent: recv.agent }),
    /within 5 s/,
  );
});

test('a server streaming 10 MB is cut at 64 KiB', async () => {
  recv.script = ['stream'];
  recv.streamed = 0;
  const r = await postJson(
    recv.url(),
    { x: 1 },
    { resolve: receiverResolve, allow: ['127.0.0.1'], agent: recv.agent },
  );
  assert.equal(r.truncated, true);
  assert.equal(Buffer.byteLength(r.body), OUTBOUND_MAX_BYTES);
  // The connection was closed: the server could not push the whole 10 MB.
  assert.ok(recv.streamed < 10 * 1024 * 1024, `server sent ${recv.streamed} bytes`);
});
