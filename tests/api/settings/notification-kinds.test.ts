// The channel kinds beside Discord and Slack, over the API with the typed client, each with its
// test call to a real receiver on loopback: a signed webhook (its secret shown once, kept by a
// revert of its deletion), Telegram, ntfy and Gotify to an HTTPS receiver, email to an SMTP server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { adminClient, type Client } from '../../_support/server.js';
import { startReceiver, RECEIVER_HOST, type Receiver } from '../../_support/receiver.js';
import { startSmtpServer, SMTP_HOST, type SmtpServer } from '../../_support/smtp.js';
import type { SvcClient } from '../../../client/index.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';

let s: TestApp;
let api: SvcClient;
let owner: Client;
let recv: Receiver;
let smtp: SmtpServer;

before(async () => {
  recv = await startReceiver();
  smtp = await startSmtpServer();
  s = await startTestApp({ SVC_NOTIFY_ALLOW: '127.0.0.1' });
  const resolve = async (h: string): Promise<ResolvedAddress[]> => {
    if (h === RECEIVER_HOST || h === SMTP_HOST) return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
  };
  Object.assign(s.env.notifier.transport, { agent: recv.agent, resolve, ca: smtp.caPem });
  owner = await adminClient(s);
  api = await typedClient(s);
});
after(async () => {
  await s?.stop();
  await recv?.close();
  await smtp?.close();
});

const last = (path: string) => recv.received.filter((r) => r.path.startsWith(path)).at(-1)!;

async function testCall(id: string) {
  const r = await api.POST('/api/settings/notifications/{id}/test', { params: { path: { id } } });
  assert.equal(r.response.status, 200);
  return r.data!;
}

test('webhook: the secret is answered once, every delivery is signed with it, a revert keeps it', async () => {
  const made = await api.POST('/api/settings/notifications', {
    body: { kind: 'webhook', name: 'hook', url: recv.url('/hook/one') },
  });
  assert.equal(made.response.status, 201);
  const { channel, secret } = made.data!;
  assert.match(secret!, /^whsec_/);
  const listed = await owner.req('GET', '/api/settings/notifications');
  assert.ok(!listed.text.includes(secret!), 'never shown again');
  assert.deepEqual(await testCall(channel.id), { ok: true, status: 204 });
  const got = last('/hook/one');
  const sign = (k: string) => `sha256=${createHmac('sha256', k).update(got.body).digest('hex')}`;
  assert.equal(got.headers['x-svc-signature'], sign(secret!));
  assert.equal(got.headers['x-svc-event'], 'control_plane_started');
  assert.equal(got.json.title, 'Test notification for hook');
  // Deleted and brought back by a revert: the receiver's secret still verifies.
  assert.equal(
    (await api.DELETE('/api/settings/notifications/{id}', { params: { path: { id: channel.id } } })).response
      .status,
    204,
  );
  const entry = (
    await owner.req(
      'GET',
      `/api/audit?action=${encodeURIComponent('DELETE /api/settings/notifications/{id}')}`,
    )
  ).body.items[0];
  const rev = await owner.req('POST', `/api/audit/${entry.id}/revert`);
  assert.equal(rev.status, 200, rev.text);
  const back = (await api.GET('/api/settings/notifications')).data!.items.find((c) => c.name === 'hook')!;
  await testCall(back.id);
  const again = last('/hook/one');
  assert.equal(
    again.headers['x-svc-signature'],
    `sha256=${createHmac('sha256', secret!).update(again.body).digest('hex')}`,
  );
});

test('telegram, ntfy and gotify: each test call reaches its receiver in the kind’s own shape', async () => {
  const tg = await api.POST('/api/settings/notifications', {
    body: { kind: 'telegram', name: 'tg', url: recv.url('/bot123456:ABC-def/sendMessage?chat_id=-100200') },
  });
  assert.equal(tg.response.status, 201);
  await testCall(tg.data!.channel.id);
  const t = last('/bot123456');
  assert.deepEqual([t.json.chat_id, t.json.parse_mode], ['-100200', 'HTML']);
  assert.match(t.json.text, /^<b>Test notification for tg<\/b>/);

  const nt = await api.POST('/api/settings/notifications', {
    body: { kind: 'ntfy', name: 'nt', url: recv.url('/ops-alerts?auth=dG9rZW4') },
  });
  assert.equal(nt.response.status, 201);
  await testCall(nt.data!.channel.id);
  const n = recv.received.at(-1)!;
  assert.equal(n.path, '/?auth=dG9rZW4', 'published to the server root with the token kept');
  assert.deepEqual([n.json.topic, n.json.title], ['ops-alerts', 'Test notification for nt']);

  const go = await api.POST('/api/settings/notifications', {
    body: { kind: 'gotify', name: 'go', url: recv.url('/message?token=AbCdEf') },
  });
  await testCall(go.data!.channel.id);
  const g = last('/message');
  assert.deepEqual([g.json.title, typeof g.json.priority], ['Test notification for go', 'number']);

  const bad = await api.POST('/api/settings/notifications', {
    body: { kind: 'gotify', name: 'x', url: recv.url('/hook') },
  });
  assert.equal(bad.response.status, 400);
});

test('email: STARTTLS and AUTH to the SMTP server, the recipients and the message; the credentials never shown', async () => {
  const url = `smtp://svc-bot:pa55word@${SMTP_HOST}:${smtp.port}?from=svc@example.com`;
  const noTo = await api.POST('/api/settings/notifications', { body: { kind: 'email', name: 'mail', url } });
  assert.equal(noTo.response.status, 400, 'an email channel needs recipients');
  const made = await api.POST('/api/settings/notifications', {
    body: { kind: 'email', name: 'mail', url, to: ['ops@example.com', 'oncall@example.com'] },
  });
  assert.equal(made.response.status, 201);
  const ch = made.data!.channel;
  assert.equal(ch.url_hint, `smtp://${SMTP_HOST}:${smtp.port}`);
  assert.deepEqual(ch.to, ['ops@example.com', 'oncall@example.com']);
  const listed = await owner.req('GET', '/api/settings/notifications');
  assert.ok(!listed.text.includes('pa55word'));
  assert.deepEqual(await testCall(ch.id), { ok: true, status: 250 });
  const m = smtp.mails.at(-1)!;
  assert.deepEqual(
    [m.tls, m.user, m.pass, m.from, m.to],
    [true, 'svc-bot', 'pa55word', 'svc@example.com', ['ops@example.com', 'oncall@example.com']],
  );
  assert.match(m.data, /^Subject: \[svc\] Test notification for mail$/m);
  const body = Buffer.from(m.data.split('\r\n\r\n')[1]!.replace(/\r\n/g, ''), 'base64').toString();
  assert.match(body, /If you can read this, svc can reach this channel\./);
  // Recipients are changed on their own; a non-email channel has none.
  const p = await api.PATCH('/api/settings/notifications/{id}', {
    params: { path: { id: ch.id } },
    body: { to: ['solo@example.com'] },
  });
  assert.deepEqual(p.data!.to, ['solo@example.com']);
  await testCall(ch.id);
  assert.deepEqual(smtp.mails.at(-1)!.to, ['solo@example.com']);
  const hook = (await api.GET('/api/settings/notifications')).data!.items.find((c) => c.kind === 'webhook')!;
  const wrong = await api.PATCH('/api/settings/notifications/{id}', {
    params: { path: { id: hook.id } },
    body: { to: ['a@b.io'] },
  });
  assert.equal(wrong.response.status, 400);
});

test('every new kind goes through the guard: a private address is refused at save time', async () => {
  for (const [kind, url] of [
    ['webhook', 'https://10.0.0.1/hook'],
    ['ntfy', 'https://192.168.1.2/topic'],
    ['email', 'smtp://169.254.169.254:25'],
  ] as const) {
    const r = await api.POST('/api/settings/notifications', {
      body: { kind, name: 'bad', url, ...(kind === 'email' ? { to: ['a@b.io'] } : {}) },
    });
    assert.equal(r.response.status, 400, `${kind} ${url}`);
    assert.match(JSON.stringify(r.error), /private|link-local/);
  }
});
