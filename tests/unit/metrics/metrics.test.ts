import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { RequestMetrics } from '#lib/metrics/requests.js';
import { registerScraped } from '#lib/metrics/custom.js';
import { createMetrics } from '#lib/metrics/index.js';

test('request metrics: counts by status, cumulative buckets, sum and count in Prometheus text', async () => {
  const registry = new Registry();
  const m = new RequestMetrics();
  for (const metric of m.metrics()) registerScraped(registry, metric);
  m.observe('GET', '/api/apps/:id', 200, 0.0004);
  m.observe('GET', '/api/apps/:id', 200, 0.003);
  m.observe('GET', '/api/apps/:id', 404, 0.2);
  m.observe('GET', '/api/apps/:id', 500, 30);
  m.observe('POST', '/api/apps', 201, 0.001);
  const text = await registry.metrics();
  const line = (s: string) => assert.ok(text.split('\n').includes(s), `missing line: ${s}\n${text}`);
  line('# TYPE svc_http_requests_total counter');
  line('svc_http_requests_total{method="GET",route="/api/apps/:id",status="200"} 2');
  line('svc_http_requests_total{method="GET",route="/api/apps/:id",status="404"} 1');
  line('svc_http_requests_total{method="POST",route="/api/apps",status="201"} 1');
  line('# TYPE svc_http_request_duration_seconds histogram');
  line('svc_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/api/apps/:id"} 1');
  line('svc_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/api/apps/:id"} 2');
  line('svc_http_request_duration_seconds_bucket{le="0.25",method="GET",route="/api/apps/:id"} 3');
  line('svc_http_request_duration_seconds_bucket{le="10",method="GET",route="/api/apps/:id"} 3');
  line('svc_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/api/apps/:id"} 4');
  line('svc_http_request_duration_seconds_count{method="GET",route="/api/apps/:id"} 4');
  // A bucket bound is inclusive (le): 0.001 lands in the first bucket.
  line('svc_http_request_duration_seconds_bucket{le="0.001",method="POST",route="/api/apps"} 1');
  const sum = /svc_http_request_duration_seconds_sum\{method="GET",route="\/api\/apps\/:id"\} ([\d.]+)/.exec(
    text,
  );
  assert.ok(sum && Math.abs(Number(sum[1]) - 30.2034) < 1e-9);
  // Label values are escaped by the registry's formatter.
  m.observe('GET', 'a"b\\c', 200, 0.1);
  assert.match(await registry.metrics(), /route="a\\"b\\\\c"/);
  registry.resetMetrics();
  assert.doesNotMatch(await registry.metrics(), /svc_http_requests_total\{/);
});

test('process metrics are totals since start, read at scrape time', async () => {
  const m = createMetrics();
  const first = (await m.render()).text;
  const value = (text: string, name: string) => {
    const r = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
    assert.ok(r, `no ${name} in\n${text}`);
    return Number(r[1]);
  };
  // CPU counts from process start, not from the first scrape.
  const cpu = process.cpuUsage();
  assert.ok(value(first, 'svc_process_cpu_seconds_total') >= (cpu.user + cpu.system) / 1e6 - 0.5);
  assert.ok(value(first, 'svc_process_resident_memory_bytes') > 10 * 1024 * 1024);
  assert.ok(
    Math.abs(value(first, 'svc_process_start_time_seconds') - (Date.now() / 1000 - process.uptime())) < 2,
  );
  assert.ok(value(first, 'svc_process_open_fds') > 0);
  assert.ok(value(first, 'svc_process_max_fds') >= value(first, 'svc_process_open_fds'));
  assert.ok(value(first, 'svc_nodejs_eventloop_lag_seconds') >= 0);
  assert.match(
    first,
    new RegExp(
      `svc_nodejs_version_info\\{version="${process.version}",major="\\d+",minor="\\d+",patch="\\d+"\\} 1`,
    ),
  );
  // A metric added after the first scrape shows in the next one.
  m.add({ name: 'svc_test_gauge', help: 'test', type: 'gauge', values: () => [{ value: 7 }] });
  assert.equal(value((await m.render()).text, 'svc_test_gauge'), 7);
  // Burn CPU until the process itself reports 50 ms more user time than the first scrape did;
  // a value cached at the first scrape (or at creation) stays below what was read just before.
  const firstUser = value(first, 'svc_process_cpu_user_seconds_total');
  let userNow = process.cpuUsage().user / 1e6;
  while (userNow < firstUser + 0.05) userNow = process.cpuUsage().user / 1e6;
  assert.ok(value((await m.render()).text, 'svc_process_cpu_user_seconds_total') >= userNow);
});
