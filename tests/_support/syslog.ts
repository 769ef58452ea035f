// Syslog receivers on loopback for the drain tests: a small server of our own (TCP or TLS with a
// throwaway CA) that reads octet-counted frames (RFC 6587) and parses each message strictly by
// RFC 5424's grammar, so a malformed message fails the test; and Debian's rsyslogd, run as a
// process of the test with a config of its own, so a real syslog implementation parses what the
// drain sends.
import { createServer as netServer, type Server, type Socket } from 'node:net';
import { createServer as tlsServer } from 'node:tls';
import { spawn, type ChildProcess } from 'node:child_process';
import { access, constants, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { makeCa, issue } from './pki.js';
import { missing } from './ci.js';
import { freePort, waitListening } from './net.js';

export interface SyslogMessage {
  pri: number;
  timestamp: string;
  hostname: string;
  app: string;
  procid: string;
  msgid: string;
  sd: Record<string, Record<string, string>>;
  msg: string;
}

// HEADER SP STRUCTURED-DATA [SP MSG], RFC 5424 section 6.
const HEADER =
  /^<(\d{1,3})>1 (\S+) ([\x21-\x7e]{1,255}) ([\x21-\x7e]{1,48}) ([\x21-\x7e]{1,128}) ([\x21-\x7e]{1,32}) /;

/** Parses one RFC 5424 message; throws naming what does not conform. */
export function parse5424(text: string): SyslogMessage {
  const h = HEADER.exec(text);
  if (!h) throw new Error(`not an RFC 5424 header: ${text.slice(0, 120)}`);
  if (Number.isNaN(Date.parse(h[2]!)) || !/Z$|[+-]\d\d:\d\d$/.test(h[2]!))
    throw new Error(`bad TIMESTAMP ${h[2]}`);
  let rest = text.slice(h[0].length);
  const sd: SyslogMessage['sd'] = {};
  if (rest.startsWith('-')) rest = rest.slice(1);
  else {
    while (rest.startsWith('[')) {
      const id = /^\[([\x21-\x7e]+?)(?=[ \]])/.exec(rest);
      if (!id || /[=\]" ]/.test(id[1]!)) throw new Error(`bad SD-ID in ${rest.slice(0, 80)}`);
      rest = rest.slice(id[0].length);
      const params: Record<string, string> = {};
      for (;;) {
        const p = /^ ([\x21-\x7e]{1,32}?)="((?:[^"\\\]]|\\["\\\]])*)"/.exec(rest);
        if (!p) break;
        params[p[1]!] = p[2]!.replace(/\\(["\\\]])/g, '$1');
        rest = rest.slice(p[0].length);
      }
      if (!rest.startsWith(']')) throw new Error(`unterminated SD-ELEMENT at ${rest.slice(0, 80)}`);
      rest = rest.slice(1);
      sd[id[1]!] = params;
    }
  }
  if (rest !== '' && !rest.startsWith(' ')) throw new Error(`no SP before MSG: ${rest.slice(0, 40)}`);
  return {
    pri: Number(h[1]),
    timestamp: h[2]!,
    hostname: h[3]!,
    app: h[4]!,
    procid: h[5]!,
    msgid: h[6]!,
    sd,
    msg: rest.slice(1),
  };
}

export interface SyslogServer {
  port: number;
  /** The CA that signed the TLS server's certificate (PEM), for the drain's transport. */
  caPem: string | null;
  messages: SyslogMessage[];
  /** Frames that did not parse (a test expects none). */
  errors: string[];
  connections: number;
  close(): Promise<void>;
}

/** Reads `LEN SP MSG` frames off a connection. */
function frames(socket: Socket, onFrame: (text: string) => void, onError: (e: string) => void): void {
  let buf = Buffer.alloc(0);
  socket.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    for (;;) {
      const sp = buf.indexOf(0x20);
      if (sp < 0) return;
      const len = Number(buf.subarray(0, sp).toString());
      if (!Number.isInteger(len) || len <= 0) {
        onError(`bad frame length ${buf.subarray(0, Math.min(sp, 20)).toString()}`);
        socket.destroy();
        return;
      }
      if (buf.length < sp + 1 + len) return;
      onFrame(buf.subarray(sp + 1, sp + 1 + len).toString('utf8'));
      buf = buf.subarray(sp + 1 + len);
    }
  });
  socket.on('error', () => {});
}

export async function startSyslogServer(opts: { tls?: boolean; host?: string } = {}): Promise<SyslogServer> {
  let dir: string | null = null;
  let caPem: string | null = null;
  const s: SyslogServer = {
    port: 0,
    caPem: null,
    messages: [],
    errors: [],
    connections: 0,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      for (const c of sockets) c.destroy();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
  const sockets = new Set<Socket>();
  const onConnection = (socket: Socket) => {
    s.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    frames(
      socket,
      (text) => {
        try {
          s.messages.push(parse5424(text));
        } catch (e) {
          s.errors.push((e as Error).message);
        }
      },
      (e) => s.errors.push(e),
    );
  };
  let server: Server;
  if (opts.tls) {
    dir = await mkdtemp(join(tmpdir(), 'svc-syslog-'));
    const ca = await makeCa(dir, 'svc syslog CA');
    const leaf = await issue(ca, [opts.host ?? 'syslog.test', 'localhost', '127.0.0.1']);
    caPem = ca.certPem;
    server = tlsServer({ cert: leaf.certPem, key: leaf.keyPem }, onConnection);
  } else server = netServer(onConnection);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  s.port = (server.address() as { port: number }).port;
  s.caPem = caPem;
  return s;
}

const RSYSLOGD = '/usr/sbin/rsyslogd';

/** Call first: skips (loudly) where rsyslogd is not installed, or fails under CI. */
export async function needRsyslog(t: TestContext): Promise<boolean> {
  try {
    await access(RSYSLOGD, constants.X_OK);
    return true;
  } catch {
    return missing(t, `${RSYSLOGD} is missing (Debian: apt-get install rsyslog)`, 'SVC_REQUIRE_RSYSLOG');
  }
}

export interface Rsyslog {
  port: number;
  /** What rsyslogd parsed, one record per message: its RFC 5424 fields as rsyslog reads them. */
  records(): Promise<
    Array<{ app: string; procid: string; msgid: string; sd: string; msg: string; severity: number }>
  >;
  close(): Promise<void>;
}

/** rsyslogd in the foreground on a loopback TCP port, writing each message's parsed fields to a file. */
export async function startRsyslog(): Promise<Rsyslog> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'svc-rsyslog-'));
  const out = join(dir, 'out.log');
  // JSON-escaped fields (the `json` property option), one object per line.
  const conf = [
    `global(workDirectory="${dir}")`,
    'module(load="imtcp")',
    `input(type="imtcp" port="${port}" address="127.0.0.1")`,
    'template(name="fields" type="list") {',
    '  constant(value="{\\"app\\":\\"") property(name="app-name" format="json")',
    '  constant(value="\\",\\"procid\\":\\"") property(name="procid" format="json")',
    '  constant(value="\\",\\"msgid\\":\\"") property(name="msgid" format="json")',
    '  constant(value="\\",\\"sd\\":\\"") property(name="structured-data" format="json")',
    '  constant(value="\\",\\"msg\\":\\"") property(name="msg" format="json")',
    '  constant(value="\\",\\"severity\\":") property(name="syslogseverity")',
    '  constant(value="}\\n")',
    '}',
    `action(type="omfile" file="${out}" template="fields")`,
  ].join('\n');
  await writeFile(join(dir, 'rsyslog.conf'), conf);
  const child: ChildProcess = spawn(
    RSYSLOGD,
    ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'pid')],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  try {
    await waitListening(port);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`rsyslogd did not listen on ${port}: ${stderr || (e as Error).message}`);
  }
  return {
    port,
    records: async () => {
      const text = await readFile(out, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    },
    close: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
