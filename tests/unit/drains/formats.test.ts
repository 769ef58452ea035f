// What each drain kind puts on the wire: RFC 5424 syslog in octet-counted frames (read back by a
// strict parser, by a syslog server over TLS, and by Debian's rsyslogd), OTLP/HTTP JSON (read
// back by the OTLP receiver's checks), plain JSON.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { syslogFrames, syslogMessage, SD_ID, parseSyslogUrl } from '#lib/drains/kinds/syslog.js';
import { otlpBatch, otlpEndpoint } from '#lib/drains/kinds/otlp-http.js';
import { jsonBatch } from '#lib/drains/kinds/http-json.js';
import { DRAIN_KIND_TABLE, DRAIN_KINDS, type DrainLine } from '#lib/drains/kinds/index.js';
import type { ResolvedAddress } from '#lib/net/outbound.js';
import {
  parse5424,
  startSyslogServer,
  startRsyslog,
  needRsyslog,
  type SyslogServer,
} from '../../_support/syslog.js';
import { parseOtlpLogs } from '../../_support/otlp.js';
import { poll } from '../../_support/wait.js';

const l = (over: Partial<DrainLine> = {}): DrainLine => ({
  at: Date.parse('2024-05-01T10:00:00.123Z'),
  appId: 'a1',
  app: 'shop',
  service: 'web',
  container: 'shop-web-1',
  stream: 'stdout',
  source: 'container',
  line: 'GET / 200 "ok" ] \\ é',
  ...over,
});

const resolve = async (h: string): Promise<ResolvedAddress[]> => {
  if (h === 'syslog.test') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
};

test('every kind of the list has its file in the table', () => {
  assert.deepEqual(Object.keys(DRAIN_KIND_TABLE).sort(), [...DRAIN_KINDS].sort());
});

test('syslog: an RFC 5424 message with app, service and container as structured data', () => {
  const m = parse5424(syslogMessage(l(), 'host-1'));
  assert.equal(m.pri, 14, 'facility user, severity info');
  assert.equal(m.timestamp, '2024-05-01T10:00:00.123Z');
  assert.deepEqual([m.hostname, m.app, m.procid, m.msgid], ['host-1', 'shop', 'web', 'container']);
  assert.deepEqual(m.sd[SD_ID], {
    app: 'shop',
    app_id: 'a1',
    service: 'web',
    container: 'shop-web-1',
    stream: 'stdout',
    source: 'container',
  });
  assert.equal(m.msg, 'GET / 200 "ok" ] \\ é');
  assert.equal(parse5424(syslogMessage(l({ stream: 'stderr' }))).pri, 11, 'stderr is severity err');
  // A value with the three escaped characters, and a service name with a space.
  const odd = parse5424(syslogMessage(l({ container: 'a"b]c\\d', service: 'my svc' })));
  assert.equal(odd.sd[SD_ID]!.container, 'a"b]c\\d');
  assert.equal(odd.procid, 'my_svc');
});

test('syslog: frames are counted in bytes, not characters', () => {
  const buf = syslogFrames([l(), l({ line: 'second' })]);
  const sp = buf.indexOf(0x20);
  const len = Number(buf.subarray(0, sp).toString());
  assert.equal(buf.subarray(sp + 1, sp + 1 + len).toString('utf8'), syslogMessage(l()));
  assert.ok(
    buf
      .subarray(sp + 1 + len)
      .toString()
      .endsWith('second'),
  );
});

test('syslog URLs: TLS by default port 6514, cleartext only to exempted addresses', async () => {
  assert.deepEqual(parseSyslogUrl('syslog+tls://logs.example.com'), {
    tls: true,
    host: 'logs.example.com',
    port: 6514,
  });
  assert.deepEqual(parseSyslogUrl('syslog://10.0.0.5'), { tls: false, host: '10.0.0.5', port: 514 });
  assert.throws(() => parseSyslogUrl('tcp://x:1'), /syslog\+tls/);
  assert.throws(() => parseSyslogUrl('syslog+tls://u:p@x:1'), /host and a port/);
  await assert.rejects(DRAIN_KIND_TABLE.syslog.check('syslog://syslog.test:514', { resolve }), /loopback/);
  await assert.rejects(
    DRAIN_KIND_TABLE.syslog.check('syslog://8.8.8.8:514', {}),
    /cleartext: use syslog\+tls/,
  );
  await DRAIN_KIND_TABLE.syslog.check('syslog://syslog.test:514', { resolve, allow: ['127.0.0.1'] });
});

test('OTLP/HTTP JSON: one resource per container, records with time, severity, body and stream', () => {
  const body = JSON.parse(
    otlpBatch([l(), l({ stream: 'stderr', line: 'boom' }), l({ container: 'shop-web-2' })]).toString(),
  );
  const records = parseOtlpLogs(body);
  assert.equal(body.resourceLogs.length, 2);
  assert.equal(records.length, 3);
  assert.deepEqual(records[0]!.resource, {
    'service.name': 'shop/web',
    'service.namespace': 'shop',
    'container.name': 'shop-web-1',
    'svc.app': 'shop',
    'svc.app_id': 'a1',
    'svc.service': 'web',
  });
  assert.equal(records[0]!.time, Date.parse('2024-05-01T10:00:00.123Z'));
  assert.deepEqual(
    [records[1]!.severity, records[1]!.body, records[1]!.attributes['log.iostream']],
    ['ERROR', 'boom', 'stderr'],
  );
  assert.equal(otlpEndpoint('https://otel.example.com'), 'https://otel.example.com/v1/logs');
  assert.equal(otlpEndpoint('https://otel.example.com/custom/logs'), 'https://otel.example.com/custom/logs');
});

test('plain JSON: an array of lines with their attributes', () => {
  assert.deepEqual(JSON.parse(jsonBatch([l()]).toString()), [
    {
      time: '2024-05-01T10:00:00.123Z',
      app: 'shop',
      app_id: 'a1',
      service: 'web',
      container: 'shop-web-1',
      stream: 'stdout',
      source: 'container',
      message: 'GET / 200 "ok" ] \\ é',
    },
  ]);
});

let tlsServer: SyslogServer | null = null;
after(() => tlsServer?.close());

test('syslog over TLS to a syslog server: the name is checked against its certificate, every line arrives', async () => {
  tlsServer = await startSyslogServer({ tls: true });
  const sender = DRAIN_KIND_TABLE.syslog.sender({
    url: `syslog+tls://syslog.test:${tlsServer.port}`,
    headers: {},
    transport: { resolve, allow: ['127.0.0.1'], ca: tlsServer.caPem! },
  });
  const batch = Array.from({ length: 200 }, (_, i) => l({ line: `line ${i}` }));
  assert.deepEqual(await sender.send(batch), { ok: true, status: null });
  assert.deepEqual(await sender.send([l({ line: 'again' })]), { ok: true, status: null });
  await poll('201 messages', () => tlsServer!.messages.length === 201, 10_000, 20);
  assert.deepEqual(tlsServer.errors, []);
  assert.equal(tlsServer.connections, 1, 'one connection kept for both batches');
  assert.equal(tlsServer.messages[199]!.msg, 'line 199');
  sender.close();
  // A certificate the transport does not trust: refused, reported.
  const untrusted = DRAIN_KIND_TABLE.syslog.sender({
    url: `syslog+tls://syslog.test:${tlsServer.port}`,
    headers: {},
    transport: { resolve, allow: ['127.0.0.1'] },
  });
  const r = await untrusted.send([l()]);
  assert.equal(r.ok, false);
  assert.match(r.error!, /certificate/i);
  untrusted.close();
});

test("Debian's rsyslogd reads the drain's messages: app-name, procid, msgid, structured data, severity", async (t) => {
  if (!(await needRsyslog(t))) return;
  const rs = await startRsyslog();
  try {
    const sender = DRAIN_KIND_TABLE.syslog.sender({
      url: `syslog://syslog.test:${rs.port}`,
      headers: {},
      transport: { resolve, allow: ['127.0.0.1'] },
    });
    const r = await sender.send([l(), l({ stream: 'stderr', line: 'failed: "x"' })]);
    assert.equal(r.ok, true, r.error);
    const records = await poll(
      'rsyslogd wrote both',
      async () => ((await rs.records()).length >= 2 ? rs.records() : null),
      15_000,
      50,
    );
    sender.close();
    assert.deepEqual(
      records.map((x) => [x.app, x.procid, x.msgid, x.severity, x.msg]),
      [
        ['shop', 'web', 'container', 6, 'GET / 200 "ok" ] \\ é'],
        ['shop', 'web', 'container', 3, 'failed: "x"'],
      ],
    );
    assert.match(
      records[0]!.sd,
      /^\[svc@32473 app="shop" app_id="a1" service="web" container="shop-web-1" stream="stdout" source="container"\]$/,
    );
  } finally {
    await rs.close();
  }
});
