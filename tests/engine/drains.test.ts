// A log drain against the real engine: an app container writes about 1,000 lines a second while
// it answers HTTP; its lines reach an HTTP JSON receiver with the app, service and container;
// then the receiver is dead for a minute. The app's requests all succeed meanwhile, the drain's
// buffer stays within SVC_DRAIN_BUFFER, and once the receiver is back every line the drain read
// is either delivered or counted as dropped, and the count is shown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { poll } from '../_support/wait.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_SERVICE } from '#lib/docker/names.js';
import { ownerLabels } from '#lib/docker/owner.js';
import { removeTagged } from './_helpers.js';

const TAG = `drains-${process.pid}`;
const BUFFER = 10_000;
const DEAD_MS = 60_000;
let s: TestServer | undefined;
let c: Client;

/** A plain HTTP receiver (loopback is exempted) that can die and come back on the same port. */
class Receiver {
  port = 0;
  lines = new Set<number>();
  requests = 0;
  sample: any = null;
  private server: Server | null = null;

  async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (b: Buffer) => chunks.push(b));
      req.on('end', () => {
        this.requests++;
        for (const l of JSON.parse(Buffer.concat(chunks).toString())) {
          this.sample ??= l;
          const m = /^line (\d+)$/.exec(l.message);
          if (m) this.lines.add(Number(m[1]));
        }
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as { port: number }).port;
  }

  async die(): Promise<void> {
    this.server!.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}

const recv = new Receiver();

before(async () => {
  await recv.listen();
  s = await startTestServer({
    SVC_NOTIFY_ALLOW: '127.0.0.1',
    SVC_DRAIN_BUFFER: String(BUFFER),
    SVC_RESOURCE_INTERVAL: '15',
  });
  s.env.drains.pipeTimings = { backoffMs: [200, 500, 1000] };
  c = await adminClient(s);
});
after(async () => {
  if (s) {
    for (const ct of await s.env.engine.docker.listContainers({
      filters: { label: [`svc.test=${TAG}`], status: ['paused'] },
    }))
      await s.env.engine.docker
        .getContainer(ct.Id)
        .unpause()
        .catch(() => {});
    await removeTagged(s.env.engine, TAG);
    await s.stop();
  }
  await recv.die().catch(() => {});
});

function get(ip: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: ip, port: 8080, path: '/', timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

test('a dead receiver for a minute while an app logs 1,000 lines a second', async (t) => {
  if (!(await needEngine(t))) return;
  const app = (
    await c.req('POST', '/api/apps', { name: `${TAG}-app`, source: { type: 'image', image: BASE_IMAGE } })
  ).body.app;
  const d = await c.req('POST', '/api/log-drains', {
    name: 'receiver',
    kind: 'http_json',
    url: `http://127.0.0.1:${recv.port}/logs`,
    app_ids: [app.id],
  });
  assert.equal(d.status, 201, d.text);
  const drain = d.body.drain.id;
  // 100 lines every 0.1 s, numbered, while busybox httpd answers on 8080.
  const script =
    'mkdir -p /www && echo ok > /www/index.html && httpd -p 8080 -h /www && ' +
    'i=0; while :; do j=0; while [ $j -lt 100 ]; do echo "line $i"; i=$((i+1)); j=$((j+1)); done; usleep 100000; done';
  const ctr = await s!.env.engine.docker.createContainer({
    Image: BASE_IMAGE,
    name: `svc-${app.name}-web-1`,
    Cmd: ['sh', '-c', script],
    Labels: {
      ...ownerLabels(s!.env.engine),
      [LABEL_APP]: app.name,
      [LABEL_SERVICE]: 'web',
      [LABEL_DEPLOYMENT]: 'drains',
      'svc.test': TAG,
    },
  });
  await ctr.start();
  const ip = Object.values((await ctr.inspect()).NetworkSettings.Networks)[0]!.IPAddress;
  await poll('the app answers', async () => (await get(ip)) === 200, 30_000, 200);
  await poll('lines at the receiver', () => recv.lines.size >= 2000, 60_000, 200);
  assert.deepEqual(
    [
      recv.sample.app,
      recv.sample.app_id,
      recv.sample.service,
      recv.sample.container,
      recv.sample.stream,
      recv.sample.source,
    ],
    [app.name, app.id, 'web', `svc-${app.name}-web-1`, 'stdout', 'container'],
  );

  // The receiver dies for a minute; the app is asked for a page every 250 ms meanwhile.
  const heapBefore = process.memoryUsage().heapUsed;
  await recv.die();
  const statuses: number[] = [];
  let maxBuffered = 0;
  const end = Date.now() + DEAD_MS;
  while (Date.now() < end) {
    statuses.push(await get(ip));
    const v = (await c.req('GET', `/api/log-drains/${drain}`)).body;
    maxBuffered = Math.max(maxBuffered, v.buffered);
    await new Promise((r) => setTimeout(r, 250));
  }
  const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
  const during = (await c.req('GET', `/api/log-drains/${drain}`)).body;
  console.log(
    `dead receiver: ${statuses.length} requests, max buffered ${maxBuffered}, dropped ${during.dropped}, heap +${Math.round(heapGrowth / 1048576)} MiB`,
  );
  assert.ok(statuses.length > 20);
  assert.deepEqual(
    statuses.filter((x) => x !== 200),
    [],
    "every request to the app succeeded while its drain's receiver was dead",
  );
  assert.ok(maxBuffered <= BUFFER + 1000, `the buffer stayed bounded: ${maxBuffered}`);
  assert.ok(during.dropped > 0, 'a minute of 1,000 lines a second does not fit in 10,000');
  assert.equal(during.state, 'failing');
  assert.equal(during.last_delivery.ok, false);
  assert.ok(heapGrowth < 200 * 1048576, `heap grew ${heapGrowth} bytes`);

  // Back: the app stops writing, the waiting lines go out, and every line is accounted for.
  await recv.listen();
  await ctr.pause();
  await poll(
    'the buffer emptied',
    async () => {
      const v = (await c.req('GET', `/api/log-drains/${drain}`)).body;
      return v.buffered === 0 && v.state === 'idle' ? v : null;
    },
    120_000,
    250,
  );
  await s!.env.drains.flushCounts();
  const final = (await c.req('GET', `/api/log-drains/${drain}`)).body;
  const accepted = s!.env.drains.accepted(drain);
  console.log(
    `accepted ${accepted}, delivered ${final.delivered}, dropped ${final.dropped}, received ${recv.lines.size} distinct`,
  );
  assert.equal(
    final.delivered + final.dropped,
    accepted,
    'every line read is delivered or counted as dropped',
  );
  assert.ok(recv.lines.size <= accepted);
  assert.ok(recv.lines.size + final.dropped >= accepted, 'what was not dropped arrived (at least once)');
});
