// A small SMTP client for the email channel, over the guarded socket (lib/net/socket.ts):
// `smtps://` is TLS from the first byte; `smtp://` must offer STARTTLS and is upgraded before
// anything else is said, unless every address of the server is exempted by SVC_NOTIFY_ALLOW (a
// relay on the LAN). Credentials are sent only over TLS or to such a relay.
import type { Socket } from 'node:net';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { connectOutbound, startTls } from '../net/socket.js';
import type { OutboundOptions } from '../net/outbound.js';

export const SMTP_TIMEOUT_MS = 15_000;

export interface SmtpServer {
  secure: boolean;
  host: string;
  port: number;
  user: string | null;
  pass: string | null;
  from: string;
}

export interface Mail {
  to: string[];
  subject: string;
  text: string;
}

/** smtp://[user:pass@]host[:port][?from=address] or smtps://...; throws naming what is wrong. */
export function parseSmtpUrl(raw: string): SmtpServer {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error('not a URL');
  }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:')
    throw new Error('an email URL starts with smtp:// or smtps://');
  if (!u.hostname) throw new Error('the URL has no host');
  const secure = u.protocol === 'smtps:';
  const user = u.username ? decodeURIComponent(u.username) : null;
  const from = u.searchParams.get('from') ?? (user && EMAIL.test(user) ? user : `svc@${u.hostname}`);
  if (!EMAIL.test(from)) throw new Error(`from "${from.slice(0, 80)}" is not an email address`);
  return {
    secure,
    host: u.hostname,
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    user,
    pass: u.password ? decodeURIComponent(u.password) : null,
    from,
  };
}

export const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+$/;

/** Reads SMTP replies (a code and its lines, continued with `-`) from a socket. */
class Replies {
  private buf = '';
  private lines: string[] = [];
  private waiter: ((r: { code: number; text: string }) => void) | null = null;
  private failed: Error | null = null;
  private fail: ((e: Error) => void) | null = null;

  constructor(socket: Socket) {
    this.attach(socket);
  }

  attach(socket: Socket): void {
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => this.feed(c));
    socket.on('error', (e) => this.abort(e));
    socket.on('close', () => this.abort(new Error('the server closed the connection')));
  }

  private feed(chunk: string): void {
    this.buf += chunk;
    if (this.buf.length > 64 * 1024) return this.abort(new Error('the server sent an overlong reply'));
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, nl).replace(/\r$/, '');
      this.buf = this.buf.slice(nl + 1);
      this.lines.push(line);
      if (/^\d{3}(?: |$)/.test(line)) {
        const reply = { code: Number(line.slice(0, 3)), text: this.lines.map((l) => l.slice(4)).join('\n') };
        this.lines = [];
        const w = this.waiter;
        this.waiter = null;
        this.fail = null;
        w?.(reply);
      }
    }
  }

  private abort(e: Error): void {
    this.failed ??= e;
    const f = this.fail;
    this.fail = null;
    this.waiter = null;
    f?.(e);
  }

  next(): Promise<{ code: number; text: string }> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiter = resolve;
      this.fail = reject;
    });
  }
}

export class SmtpError extends Error {
  constructor(
    readonly code: number | null,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Sends one mail; resolves with the server's final reply code. Throws OutboundRefused, SmtpError
 * or Error. `connect` is the guarded connection (a test hands one that reports the server as not
 * exempted, to see STARTTLS required).
 */
export async function sendMail(
  server: SmtpServer,
  mail: Mail,
  opts: OutboundOptions = {},
  connect: typeof connectOutbound = connectOutbound,
): Promise<number> {
  const opened = await connect(
    { host: server.host, port: server.port, tls: server.secure, upgradable: !server.secure },
    opts,
  );
  let socket = opened.socket;
  const timer = setTimeout(
    () => socket.destroy(new Error(`no answer within ${SMTP_TIMEOUT_MS / 1000} s`)),
    SMTP_TIMEOUT_MS,
  );
  try {
    let replies = new Replies(socket);
    const say = async (line: string | null, want: number[], what: string) => {
      if (line !== null) socket.write(`${line}\r\n`);
      const r = await replies.next();
      if (!want.includes(r.code))
        throw new SmtpError(r.code, `${what}: the server answered ${r.code} ${r.text.slice(0, 200)}`);
      return r;
    };
    await say(null, [220], 'greeting');
    const name = hostname().replace(/[^A-Za-z0-9.-]/g, '') || 'svc';
    let caps = (await say(`EHLO ${name}`, [250], 'EHLO')).text.toUpperCase().split('\n');
    let secure = server.secure;
    if (!secure && caps.some((c) => c.startsWith('STARTTLS'))) {
      await say('STARTTLS', [220], 'STARTTLS');
      socket.removeAllListeners('data');
      socket.removeAllListeners('error');
      socket.removeAllListeners('close');
      socket = await startTls(socket, server.host, opts);
      replies = new Replies(socket);
      secure = true;
      caps = (await say(`EHLO ${name}`, [250], 'EHLO')).text.toUpperCase().split('\n');
    }
    if (!secure && !opened.exempt)
      throw new SmtpError(
        null,
        'the server does not offer STARTTLS (required unless SVC_NOTIFY_ALLOW exempts it)',
      );
    if (server.user !== null) await authenticate(say, caps, server);
    await say(`MAIL FROM:<${server.from}>`, [250], 'MAIL FROM');
    for (const to of mail.to) await say(`RCPT TO:<${to}>`, [250, 251], `RCPT TO ${to}`);
    await say('DATA', [354], 'DATA');
    const done = await say(`${formatMail(server.from, mail)}\r\n.`, [250], 'the message');
    socket.write('QUIT\r\n');
    return done.code;
  } finally {
    clearTimeout(timer);
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }
}

type Say = (line: string | null, want: number[], what: string) => Promise<{ code: number; text: string }>;

async function authenticate(say: Say, caps: string[], server: SmtpServer): Promise<void> {
  const auth = caps.find((c) => c.startsWith('AUTH')) ?? '';
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  if (/\bPLAIN\b/.test(auth) || !/\bLOGIN\b/.test(auth)) {
    await say(`AUTH PLAIN ${b64(`\0${server.user}\0${server.pass ?? ''}`)}`, [235], 'AUTH');
    return;
  }
  await say('AUTH LOGIN', [334], 'AUTH');
  await say(b64(server.user!), [334], 'AUTH');
  await say(b64(server.pass ?? ''), [235], 'AUTH');
}

const headerText = (s: string) => {
  const clean = s.replace(/[\r\n]+/g, ' ').slice(0, 200);
  return /^[\x20-\x7e]*$/.test(clean)
    ? clean
    : `=?UTF-8?B?${Buffer.from(clean, 'utf8').toString('base64')}?=`;
};

/** The message: plain text as base64 (any character, any line length), every line of DATA dot-safe. */
export function formatMail(from: string, mail: Mail, now = new Date()): string {
  const domain = from.slice(from.indexOf('@') + 1);
  const body = Buffer.from(mail.text, 'utf8').toString('base64').replace(/.{76}/g, '$&\r\n');
  return [
    `From: svc <${from}>`,
    `To: ${mail.to.join(', ')}`,
    `Subject: ${headerText(mail.subject)}`,
    `Date: ${now.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <${randomBytes(12).toString('hex')}@${domain}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    body,
  ].join('\r\n');
}
