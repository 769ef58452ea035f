// An SMTP server on loopback for the email channel's tests: EHLO with STARTTLS (a throwaway CA)
// unless told not to offer it, AUTH PLAIN and LOGIN, MAIL/RCPT/DATA with dot-unstuffing; it
// records each mail with whether the session was encrypted and who authenticated.
import { createServer, type Server, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCa, issue } from './pki.js';

export const SMTP_HOST = 'mail.test';

export interface ReceivedMail {
  from: string;
  to: string[];
  data: string;
  tls: boolean;
  user: string | null;
  pass: string | null;
}

export interface SmtpServer {
  port: number;
  caPem: string;
  mails: ReceivedMail[];
  /** Offer STARTTLS in EHLO (default true). */
  offerTls: boolean;
  close(): Promise<void>;
}

export async function startSmtpServer(): Promise<SmtpServer> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-smtp-'));
  const ca = await makeCa(dir, 'svc smtp CA');
  const leaf = await issue(ca, [SMTP_HOST, 'localhost', '127.0.0.1']);
  const sockets = new Set<Socket>();
  const s: SmtpServer = {
    port: 0,
    caPem: ca.certPem,
    mails: [],
    offerTls: true,
    close: async () => {
      for (const c of sockets) c.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(dir, { recursive: true, force: true });
    },
  };
  const session = (raw: Socket) => {
    sockets.add(raw);
    raw.on('close', () => sockets.delete(raw));
    let sock: Socket = raw;
    let tls = false;
    let buf = '';
    let inData = false;
    let data: string[] = [];
    let mail: Partial<ReceivedMail> = { to: [] };
    let auth: { user: string | null; pass: string | null } = { user: null, pass: null };
    let loginStep: 0 | 1 | 2 = 0;
    const say = (l: string) => sock.write(`${l}\r\n`);
    const onLine = (line: string) => {
      if (inData) {
        if (line === '.') {
          inData = false;
          s.mails.push({ from: mail.from ?? '', to: mail.to ?? [], data: data.join('\r\n'), tls, ...auth });
          mail = { to: [] };
          data = [];
          return say('250 2.0.0 queued');
        }
        return void data.push(line.startsWith('..') ? line.slice(1) : line);
      }
      if (loginStep === 1) {
        auth.user = Buffer.from(line, 'base64').toString();
        loginStep = 2;
        return say('334 UGFzc3dvcmQ6');
      }
      if (loginStep === 2) {
        auth.pass = Buffer.from(line, 'base64').toString();
        loginStep = 0;
        return say('235 2.7.0 ok');
      }
      const verb = line.slice(0, 4).toUpperCase();
      if (verb === 'EHLO') {
        const caps = [
          '250-mail.test',
          ...(s.offerTls && !tls ? ['250-STARTTLS'] : []),
          '250-AUTH PLAIN LOGIN',
          '250 8BITMIME',
        ];
        return void caps.forEach(say);
      }
      if (verb === 'STAR') {
        say('220 2.0.0 go ahead');
        sock.removeAllListeners('data');
        const t = new TLSSocket(sock, { isServer: true, cert: leaf.certPem, key: leaf.keyPem });
        sock = t;
        tls = true;
        buf = '';
        return void t.on('data', onData);
      }
      if (verb === 'AUTH') {
        const [, mech, arg] = line.split(' ');
        if (mech?.toUpperCase() === 'PLAIN') {
          const [, u, p] = Buffer.from(arg ?? '', 'base64')
            .toString()
            .split('\0');
          auth = { user: u ?? null, pass: p ?? null };
          return say('235 2.7.0 ok');
        }
        loginStep = 1;
        return say('334 VXNlcm5hbWU6');
      }
      if (verb === 'MAIL') return ((mail.from = /<([^>]*)>/.exec(line)?.[1] ?? ''), say('250 ok'));
      if (verb === 'RCPT') return (mail.to!.push(/<([^>]*)>/.exec(line)?.[1] ?? ''), say('250 ok'));
      if (verb === 'DATA') return ((inData = true), say('354 end with .'));
      if (verb === 'QUIT') return (say('221 bye'), sock.end());
      say('502 unknown');
    };
    const onData = (c: Buffer) => {
      buf += c.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 2);
        onLine(line);
      }
    };
    raw.on('data', onData);
    raw.on('error', () => {});
    say('220 mail.test ESMTP');
  };
  const server: Server = createServer(session);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  s.port = (server.address() as { port: number }).port;
  return s;
}
