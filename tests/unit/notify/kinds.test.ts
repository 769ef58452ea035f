// The channel kinds' payloads and checks, and the SMTP client against a real SMTP server on
// loopback (tests/_support/smtp.ts): STARTTLS before anything is said, AUTH, the message as sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { buildMessage } from '#lib/notify/message.js';
import { CHANNEL_KINDS, CHANNEL_KIND_TABLE } from '#lib/notify/kinds/index.js';
import { signature, webhookPayload } from '#lib/notify/kinds/webhook.js';
import { telegramPayload } from '#lib/notify/kinds/telegram.js';
import { ntfyPayload } from '#lib/notify/kinds/ntfy.js';
import { gotifyPayload } from '#lib/notify/kinds/gotify.js';
import { formatMail, parseSmtpUrl, sendMail, SmtpError } from '#lib/notify/smtp.js';
import { connectOutbound } from '#lib/net/socket.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';
import { startSmtpServer, SMTP_HOST, type SmtpServer } from '../../_support/smtp.js';

const fired = buildMessage(
  'alert_fired',
  {
    rule: 'CPU <hot> & busy',
    app: 'shop',
    app_id: 'a1',
    metric: 'cpu_percent',
    op: '>',
    threshold: 80,
    value: 97.5,
  },
  'https://svc.example.com',
  '2024-05-01T10:00:00.000Z',
);

test('every kind of the list has its file in the table', () => {
  assert.deepEqual(Object.keys(CHANNEL_KIND_TABLE).sort(), [...CHANNEL_KINDS].sort());
});

test('an alert message says what fired, on which app, and the value against the threshold', () => {
  assert.equal(fired.title, 'Alert: CPU <hot> & busy (shop)');
  assert.match(fired.text, /cpu_percent is 97\.5 \(> 80\)/);
  assert.equal(fired.tone, 'failure');
  assert.equal(fired.link, 'https://svc.example.com/apps/a1');
  const resolved = buildMessage('alert_resolved', { rule: 'Disk', metric: 'disk_percent', value: 40 }, null);
  assert.equal(resolved.title, 'Resolved: Disk');
  assert.ok(resolved.fields.some((f) => f.name === 'App' && f.value === 'the host'));
});

test('webhook: the signature is HMAC-SHA256 of the exact body under the secret', () => {
  const body = Buffer.from(JSON.stringify(webhookPayload(fired)));
  const expected = `sha256=${createHmac('sha256', 'whsec_k').update(body).digest('hex')}`;
  assert.equal(signature('whsec_k', body), expected);
  assert.notEqual(signature('whsec_other', body), expected);
  const p = webhookPayload(fired) as Record<string, unknown>;
  assert.equal(p.event, 'alert_fired');
  assert.equal(p.title, fired.title);
});

test('telegram: text is HTML with every value escaped; the chat comes from the URL', async () => {
  const p = telegramPayload(fired, '-1001') as { chat_id: string; text: string; parse_mode: string };
  assert.equal(p.chat_id, '-1001');
  assert.equal(p.parse_mode, 'HTML');
  assert.ok(p.text.startsWith('<b>Alert: CPU &lt;hot&gt; &amp; busy (shop)</b>'));
  assert.ok(!p.text.includes('<hot>'));
  await assert.rejects(
    CHANNEL_KIND_TABLE.telegram.check('https://api.telegram.org/bot123:abc/sendMessage', {}, {}),
    /chat_id/,
  );
});

test('ntfy and gotify: the topic and the token shapes are checked; payloads carry title, priority, link', async () => {
  const n = ntfyPayload(fired, 'ops') as Record<string, unknown>;
  assert.deepEqual([n.topic, n.title, n.priority, n.click], ['ops', fired.title, 4, fired.link]);
  await assert.rejects(CHANNEL_KIND_TABLE.ntfy.check('https://ntfy.sh/a/b', {}, {}), /<topic>/);
  const g = gotifyPayload(fired) as { priority: number; extras: unknown };
  assert.equal(g.priority, 8);
  assert.deepEqual(g.extras, { 'client::notification': { click: { url: fired.link } } });
  await assert.rejects(CHANNEL_KIND_TABLE.gotify.check('https://push.example.com/message', {}, {}), /token/);
});

test('email: the URL names the server (never shown with its credentials) and the sender', async () => {
  assert.deepEqual(parseSmtpUrl('smtp://bot%40x.io:p%3Ass@mail.example.com'), {
    secure: false,
    host: 'mail.example.com',
    port: 587,
    user: 'bot@x.io',
    pass: 'p:ss',
    from: 'bot@x.io',
  });
  assert.equal(parseSmtpUrl('smtps://mail.example.com?from=alerts@example.com').port, 465);
  assert.equal(parseSmtpUrl('smtps://mail.example.com?from=alerts@example.com').from, 'alerts@example.com');
  assert.throws(() => parseSmtpUrl('https://mail.example.com'), /smtp:\/\//);
  assert.equal(
    CHANNEL_KIND_TABLE.email.hint('smtp://u:secret@mail.example.com:587'),
    'smtp://mail.example.com:587',
  );
  await assert.rejects(
    CHANNEL_KIND_TABLE.email.check('smtp://mail.example.com', { to: ['not an address'] }, {}),
    /recipient/,
  );
  // A subject cannot add headers; the body travels as base64 lines.
  const text = formatMail('a@b.io', { to: ['x@y.io'], subject: 'hi\r\nBcc: evil@z.io', text: '.\nline' });
  assert.ok(!/^Bcc:/m.test(text));
  assert.match(text, /^Subject: hi Bcc: evil@z\.io$/m);
  const body = text.split('\r\n\r\n')[1]!.replace(/\r\n/g, '');
  assert.equal(Buffer.from(body, 'base64').toString(), '.\nline');
});

let smtp: SmtpServer;
before(async () => (smtp = await startSmtpServer()));
after(() => smtp?.close());

const resolve = async (h: string): Promise<ResolvedAddress[]> => {
  if (h === SMTP_HOST) return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
};

test('SMTP: STARTTLS first, then AUTH and the mail, to a real server', async () => {
  smtp.offerTls = true;
  const server = parseSmtpUrl(`smtp://bot:s3cret@${SMTP_HOST}:${smtp.port}?from=svc@example.com`);
  const code = await sendMail(
    server,
    { to: ['ops@example.com', 'dev@example.com'], subject: 'Alert: é', text: 'body' },
    { allow: ['127.0.0.1'], resolve, ca: smtp.caPem },
  );
  assert.equal(code, 250);
  const m = smtp.mails.at(-1)!;
  assert.equal(m.tls, true, 'the session was upgraded before AUTH');
  assert.deepEqual(
    [m.user, m.pass, m.from, m.to],
    ['bot', 's3cret', 'svc@example.com', ['ops@example.com', 'dev@example.com']],
  );
  assert.match(m.data, /^Subject: =\?UTF-8\?B\?/m);
});

test('SMTP: a server without STARTTLS is refused unless exempted; exempted, it is spoken to in clear', async () => {
  smtp.offerTls = false;
  const server = parseSmtpUrl(`smtp://bot:s3cret@${SMTP_HOST}:${smtp.port}`);
  const before = smtp.mails.length;
  const opts = { allow: ['127.0.0.1'], resolve, ca: smtp.caPem };
  // The same real server, reported as not exempted (what a public address is).
  const notExempt: typeof connectOutbound = async (t, o) => ({
    ...(await connectOutbound(t, o)),
    exempt: false,
  });
  await assert.rejects(
    sendMail(server, { to: ['ops@example.com'], subject: 's', text: 't' }, opts, notExempt),
    (e: unknown) => e instanceof SmtpError && /does not offer STARTTLS/.test(e.message),
  );
  assert.equal(smtp.mails.length, before, 'nothing sent, no credentials either');
  assert.equal(await sendMail(server, { to: ['ops@example.com'], subject: 's', text: 't' }, opts), 250);
  assert.equal(smtp.mails.at(-1)!.tls, false);
  smtp.offerTls = true;
});

test('SMTP: a loopback server that is not exempted is refused before connecting', async () => {
  const server = parseSmtpUrl(`smtp://${SMTP_HOST}:${smtp.port}`);
  await assert.rejects(
    sendMail(server, { to: ['a@b.io'], subject: 's', text: 't' }, { resolve }),
    /loopback/,
  );
});
