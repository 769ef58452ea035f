// The control plane's DNS server for Caddy's lookups (lib/proxy/resolver.ts), asked over real UDP
// by Node's own resolver (c-ares), as Caddy's Go resolver asks it: what it answers, and when it
// says Caddy has picked a change up.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { createSocket } from 'node:dgram';
import { UpstreamResolver, type Answers } from '#lib/proxy/resolver.js';
import { lookupName, parseLookupName, serviceLabel } from '#lib/proxy/lookup-names.js';
import { readQuestion, writeAnswer, QTYPE_A, RCODE_OK } from '#lib/proxy/dns-wire.js';
import { parseTcpTable } from '#lib/deploy/drain.js';
import { createLogger } from '#lib/log.js';

const APP = '01hzzzzzzzzzzzzzzzzzzzzzzz';
let table: Map<string, Map<string, string[]>> = new Map();
const servers: UpstreamResolver[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

async function serve(refreshMs = 60_000): Promise<{ r: UpstreamResolver; ask: Resolver }> {
  const r = new UpstreamResolver({
    load: async (appId): Promise<Answers> =>
      appId === null ? table : new Map([...table].filter(([id]) => id === appId)),
    log: createLogger('silent'),
    refreshMs,
    marginMs: 0,
  });
  servers.push(r);
  const port = await r.listen(0);
  await r.reload(null);
  const ask = new Resolver({ timeout: 2000, tries: 1 });
  ask.setServers([`127.0.0.1:${port}`]);
  return { r, ask };
}

const name = (service: string, port = 8080) => lookupName(APP, service, port).slice(0, -1);
/** Settles after the microtasks queued so far: whether `p` has resolved by now. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

test("names: <port>.<service>.<app id>.svc.internal., with a digest for a label Go's resolver refuses", () => {
  assert.equal(lookupName(APP, 'web', 80), `80.web.${APP}.svc.internal.`);
  assert.deepEqual(parseLookupName(`80.web.${APP}.svc.internal.`), { port: 80, label: 'web', appId: APP });
  assert.equal(parseLookupName('80.web.svc.internal.'), null);
  assert.equal(parseLookupName(`x.web.${APP}.svc.internal.`), null);
  assert.equal(parseLookupName('example.com.'), null);
  assert.equal(serviceLabel('api_v2'), 'api_v2');
  assert.match(serviceLabel('web-'), /^h[0-9a-f]{20}$/);
  assert.notEqual(serviceLabel('web-'), serviceLabel('web--'));
});

test('answers: A and AAAA records of the rows, NXDOMAIN for an app without addresses and for any other name', async () => {
  table = new Map([[APP, new Map([['web', ['172.18.0.5', '172.18.0.6', 'fd00::7']]])]]);
  const { r, ask } = await serve(50);
  assert.deepEqual((await ask.resolve4(name('web'))).sort(), ['172.18.0.5', '172.18.0.6']);
  assert.deepEqual(await ask.resolve6(name('web')), ['fd00::7']);
  // Any port of the service gets the same answer (the port only names Caddy's cache entry).
  assert.deepEqual((await ask.resolve4(name('web', 3000))).sort(), ['172.18.0.5', '172.18.0.6']);
  for (const n of [
    name('api'),
    lookupName('01hyyyyyyyyyyyyyyyyyyyyyyy', 'web', 80).slice(0, -1),
    'example.com',
  ])
    await assert.rejects(ask.resolve4(n), (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND', n);
  // Asleep or stopped: the rows give nothing, and the answer follows on the next re-read.
  table = new Map();
  await r.update(APP);
  await assert.rejects(ask.resolve4(name('web')), (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND');
  assert.equal(r.answers(APP), null);
});

test('a message that is not a query it can read gets no answer; a query with extra sections is answered', async () => {
  table = new Map([[APP, new Map([['web', ['10.1.2.3']]])]]);
  const { r } = await serve();
  const port = Number(r.address!.split(':').pop());
  const sock = createSocket('udp4');
  after(() => sock.close());
  const replies: Buffer[] = [];
  sock.on('message', (m) => replies.push(m));
  const send = (b: Buffer) => new Promise<void>((res) => sock.send(b, port, '127.0.0.1', () => res()));
  await send(Buffer.from('not dns at all'));
  // A query built by hand with an EDNS OPT record in the additional section.
  const labels = name('web').split('.');
  const q = Buffer.concat([
    Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1]),
    ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
    Buffer.from([0, 0, QTYPE_A, 0, 1]),
    Buffer.from([0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]),
  ]);
  await send(q);
  await new Promise((res) => setTimeout(res, 200));
  assert.equal(replies.length, 1, 'only the query was answered');
  assert.equal(r.counts.unreadable, 1);
  const answer = replies[0]!;
  assert.equal(answer.readUInt16BE(0), 0x1234);
  assert.equal(answer.readUInt16BE(2) & 0xf, RCODE_OK);
  assert.equal(answer.readUInt16BE(6), 1, 'one A record');
  assert.deepEqual([...answer.subarray(-4)], [10, 1, 2, 3]);
  // What it writes reads back as the same question.
  const parsed = readQuestion(q)!;
  assert.equal(parsed.name, `${name('web')}.`);
  assert.equal(writeAnswer(parsed, RCODE_OK, ['10.1.2.3']).length, answer.length);
});

test('a change is picked up once both lookups asked again after it, or once the refresh period passed since the last found answer', async () => {
  table = new Map([[APP, new Map([['web', ['10.0.0.1']]])]]);
  const { r, ask } = await serve(60_000);
  // Nobody asked yet: nothing cached anywhere, the change is taken at once.
  table = new Map([[APP, new Map([['web', ['10.0.0.2']]])]]);
  assert.equal(await settled(r.update(APP)), true);
  // Caddy asked and holds the answer (for 60 s here): the next change waits for it to ask again.
  await ask.resolve4(name('web'));
  // No IPv6 address: an empty answer (ENODATA), which still counts as the AAAA half of a lookup.
  await assert.rejects(ask.resolve6(name('web')), (e: NodeJS.ErrnoException) => e.code === 'ENODATA');
  table = new Map([[APP, new Map([['web', ['10.0.0.3']]])]]);
  const pending = r.update(APP);
  assert.equal(await settled(pending), false, 'Caddy may still hold 10.0.0.2');
  assert.deepEqual(await ask.resolve4(name('web')), ['10.0.0.3']);
  assert.equal(await settled(pending), false, 'only the A half of a lookup came');
  await ask.resolve6(name('web')).catch(() => []);
  assert.equal(await settled(pending), true, 'the lookup after the change got the new answer');
  // With a short refresh period, an answer nobody asks for again expires by itself.
  const short = await serve(50);
  await short.ask.resolve4(name('web'));
  table = new Map([[APP, new Map([['web', ['10.0.0.4']]])]]);
  const waited = await short.r.update(APP);
  assert.ok(waited >= 0);
  assert.deepEqual(await short.ask.resolve4(name('web')), ['10.0.0.4']);
});

test("the kernel's TCP table: local port, peer and state of each socket, IPv4 and IPv6", () => {
  const v4 = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1',
    '   1: 050012AC:1F90 010012AC:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1',
    '   2: 050012AC:1F90 070012AC:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1',
  ].join('\n');
  assert.deepEqual(parseTcpTable(v4), [
    { localPort: 8080, remote: '0.0.0.0', state: 0x0a },
    { localPort: 8080, remote: '172.18.0.1', state: 0x01 },
    { localPort: 8080, remote: '172.18.0.7', state: 0x01 },
  ]);
  const v6 = [
    '  sl  local_address                         remote_address                        st',
    '   0: 0000000000000000FFFF0000050012AC:1F90 0000000000000000FFFF0000070012AC:D431 01',
    '   1: 00000000000000000000000000000000:1F90 000080FE00000000FF0C0002FE42AC11:0050 01',
  ].join('\n');
  const rows = parseTcpTable(v6);
  assert.equal(rows[0]!.remote, '172.18.0.7', 'an IPv4-mapped peer reads as IPv4');
  assert.equal(rows[1]!.remote, 'fe80::200:cff:11ac:42fe');
});
