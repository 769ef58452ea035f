// An app container that speaks WebSocket itself (no library: the handshake and frames by hand), on
// the node stand-in image the stack tests build (tests/_support/stackimages.ts). For the tests and
// benchmarks of WebSockets through Caddy (sleeping apps, deploys, draining).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { EdgeLab } from './edge.js';

const run = promisify(execFile);

/**
 * Listens on 8080. Answers `<hostname> <text>` to each text frame; "bye" makes it close with
 * 4001; a close frame is answered with the same code. GET / answers its hostname; GET /conns how
 * many upgraded sockets it holds open. While /tmp/hold exists it does not listen (a wake that
 * cannot pass its gate); the file survives the stop and start of a sleep. A SIGTERM ends it at once.
 */
export const ECHO_SERVER = `
const http = require('http'), crypto = require('crypto'), fs = require('fs'), os = require('os');
process.on('SIGTERM', () => process.exit(0));
let open = 0;
const frame = (op, data) => Buffer.concat([Buffer.from([0x80 | op, data.length]), data]);
const srv = http.createServer((q, s) => s.end(q.url === '/conns' ? String(open) : os.hostname()));
srv.on('upgrade', (q, sock) => {
  const accept = crypto.createHash('sha1')
    .update(q.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  sock.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n' +
    'Sec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  open++;
  sock.on('close', () => open--);
  sock.on('error', () => sock.destroy());
  let buf = Buffer.alloc(0);
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 6) {
      const op = buf[0] & 15, n = buf[1] & 127;
      if (buf.length < 6 + n) return;
      const data = Buffer.from(buf.subarray(6, 6 + n));
      for (let i = 0; i < n; i++) data[i] ^= buf[2 + (i % 4)];
      buf = buf.subarray(6 + n);
      if (op === 8) return void sock.end(frame(8, data.subarray(0, 2)));
      if (op !== 1) continue;
      if (data.toString() === 'bye') return void sock.end(frame(8, Buffer.from([0x0f, 0xa1])));
      sock.write(frame(1, Buffer.from(os.hostname() + ' ' + data.toString())));
    }
  });
});
const go = () => (fs.existsSync('/tmp/hold') ? setTimeout(go, 100) : srv.listen(8080));
go();
`;

/** Builds the echo app's image as `tag` from `nodeImage` (labelled `svc.test=<label>`). */
export async function buildEchoImage(tag: string, nodeImage: string, label: string): Promise<void> {
  const dockerfile = [
    `FROM ${nodeImage}`,
    'EXPOSE 8080',
    `ENTRYPOINT ${JSON.stringify(['node', '-e', ECHO_SERVER])}`,
  ].join('\n');
  await run(
    'sh',
    [
      '-c',
      'printf "%s\\n" "$1" | docker build -q --network none --label "svc.test=$3" -t "$2" -',
      'sh',
      dockerfile,
      tag,
      label,
    ],
    { timeout: 120_000 },
  );
}

export type Upgrade =
  { ws: WebSocket } | { status: number; headers: IncomingMessage['headers']; body: string };

/** A WebSocket handshake: the open socket, or the HTTP answer that refused it (read to its end). */
export function upgrade(url: string, opts: WebSocket.ClientOptions): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts);
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      const socket = res.socket;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        // Caddy keeps its side of the connection for the next request: closed here, not waited for.
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    ws.once('error', reject);
  });
}

/**
 * Through the lab's Caddy with real TLS to `host`, as a browser would (`servername` goes on to
 * TLS), at `path`; `headers` are added to the handshake (a bearer token, say).
 */
export const wsThroughCaddy = (
  lab: EdgeLab,
  host: string,
  path = '/echo',
  headers: Record<string, string> = {},
) =>
  upgrade(`wss://127.0.0.1:${lab.httpsPort}${path}`, {
    servername: host,
    headers: { host, ...headers },
    ca: [lab.pebbleRoot, lab.ca.certPem],
  } as WebSocket.ClientOptions);

export function opened(u: Upgrade): WebSocket {
  if ('ws' in u) return u.ws;
  assert.fail(`the upgrade was refused: ${u.status} ${u.body}`);
}

export const nextMessage = (s: WebSocket) =>
  new Promise<string>((r) => s.once('message', (d) => r(d.toString())));
export const closed = (s: WebSocket) => new Promise<number>((r) => s.once('close', (code) => r(code)));
