import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, rename, truncate, writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AccessLogTailer, type AccessEntry } from '#lib/traffic/tailer.js';
import { parseAccessLine, LineSplitter, normalizeIp } from '#lib/traffic/parse.js';
import { caddyLine, tempDir, waitFor } from '../security/_helpers.js';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function setup(name: string, opts: ConstructorParameters<typeof AccessLogTailer>[1] = {}) {
  const { dir, cleanup } = await tempDir(name);
  const path = join(dir, 'access.log');
  const tailer = new AccessLogTailer(path, { pollIntervalMs: 50, ...opts });
  const seen: AccessEntry[] = [];
  tailer.subscribe((e) => seen.push(e));
  cleanups.push(async () => {
    await tailer.stop();
    await cleanup();
  });
  return { dir, path, tailer, seen };
}

test('parses client_ip before remote_ip, strips zones and queries, refuses non-IPs', () => {
  const e = parseAccessLine(
    caddyLine({ ts: 1700000000.25, ip: '10.0.0.1', clientIp: '203.0.113.9', uri: '/a?token=x', status: 404 }),
  );
  assert.deepEqual(e, {
    at: 1700000000250,
    ip: '203.0.113.9',
    host: 'example.test',
    method: 'GET',
    path: '/a',
    status: 404,
    bytes: 2,
    durationMs: 0.1,
  });
  assert.equal(parseAccessLine(caddyLine({ ip: 'fe80::1%eth0' }))?.ip, 'fe80::1');
  assert.equal(parseAccessLine(caddyLine({ ip: '::ffff:198.51.100.4' }))?.ip, '198.51.100.4');
  assert.equal(parseAccessLine(caddyLine({ ip: '10.0.0.1', clientIp: '' }))?.ip, '10.0.0.1');
  assert.equal(parseAccessLine(caddyLine({ clientIp: 'evil.example; rm -rf /' })), null);
  assert.equal(parseAccessLine(caddyLine({ ip: '999.1.1.1' })), null);
  assert.equal(parseAccessLine(caddyLine({ ip: 'fe80::zz%eth0' })), null);
  assert.equal(parseAccessLine('not json at all'), null);
  assert.equal(parseAccessLine('[1,2,3]'), null);
  assert.equal(parseAccessLine('null'), null);
  assert.equal(parseAccessLine('{"ts":1,"status":200}'), null, 'no request');
  assert.equal(parseAccessLine('{"ts":1,"request":{"remote_ip":"192.0.2.1"}}'), null, 'no status');
  assert.equal(
    parseAccessLine('{"ts":1,"status":"200","request":{"remote_ip":"192.0.2.1"}}'),
    null,
    'string status',
  );
  assert.equal(
    parseAccessLine('{"request":{"remote_ip":"192.0.2.1"},"status":200}', 42)?.at,
    42,
    'missing ts uses fallback',
  );
  assert.equal(normalizeIp(12), null);
  assert.equal(normalizeIp('2001:DB8::1'), '2001:db8::1');
});

test('splitter keeps a partial line, bounds oversized lines and survives chunk edges', () => {
  const lines: string[] = [];
  let oversize = 0;
  const s = new LineSplitter(
    (l) => lines.push(l),
    () => oversize++,
    100,
  );
  s.push(Buffer.from('ab'));
  s.push(Buffer.from('c\nde'));
  assert.deepEqual(lines, ['abc']);
  s.push(Buffer.from('f\n\n\r\n'));
  assert.deepEqual(lines, ['abc', 'def']);
  s.push(Buffer.from('x'.repeat(60)));
  s.push(Buffer.from('x'.repeat(60)));
  assert.equal(s.pendingBytes, 0, 'dropped the runaway line instead of buffering it');
  s.push(Buffer.from('x'.repeat(500)));
  s.push(Buffer.from('tail\nok\n'));
  assert.equal(oversize, 1);
  assert.deepEqual(lines, ['abc', 'def', 'ok']);
  s.push(Buffer.from('y'.repeat(300) + '\nz\n'));
  assert.equal(oversize, 2);
  assert.deepEqual(lines.at(-1), 'z');
});

test('starts at the end, follows appends, handles partial lines and bad input', async () => {
  const { path, tailer, seen } = await setup('append');
  await writeFile(path, caddyLine({ ip: '192.0.2.200' }) + '\n' + caddyLine({ ip: '192.0.2.201' }) + '\n');
  tailer.start();
  await waitFor(() => tailer.status().reading, 'tailer reading');
  await tailer.catchUp();
  assert.equal(seen.length, 0, 'old lines are not replayed at boot');

  const line = caddyLine({ ip: '192.0.2.10', uri: '/half' });
  await appendFile(path, line.slice(0, 40));
  await tailer.catchUp();
  assert.equal(seen.length, 0, 'a partial line waits for its end');
  await appendFile(path, line.slice(40) + '\n');
  await waitFor(() => seen.length === 1, 'the completed line');
  assert.equal(seen[0].path, '/half');

  const big = JSON.stringify({
    ts: 1,
    status: 200,
    request: { remote_ip: '192.0.2.11' },
    pad: 'x'.repeat(1024 * 1024 + 10),
  });
  await appendFile(
    path,
    'garbage {{{\n' +
      big +
      '\n' +
      caddyLine({ clientIp: 'not-an-ip' }) +
      '\n' +
      '{"ts":1}\n' +
      caddyLine({ ip: 'fe80::2%eth0' }) +
      '\n' +
      '\u0000\u0001\u00ff binary\n' +
      caddyLine({ ip: '192.0.2.12' }) +
      '\n',
  );
  await waitFor(() => seen.length === 3, 'lines after the bad ones');
  assert.deepEqual(
    seen.map((e) => e.ip),
    ['192.0.2.10', 'fe80::2', '192.0.2.12'],
  );
  const st = tailer.status();
  assert.equal(st.parseErrors, 5);
  assert.equal(st.lines, 8);
  assert.equal(st.reading, true);
  assert.ok(st.lastLineAt);
  assert.equal(st.error, undefined);
});

test('reports a missing file as not reading, then picks it up from its start', async () => {
  const { path, tailer, seen } = await setup('missing');
  tailer.start();
  await tailer.catchUp();
  assert.equal(tailer.status().reading, false);
  assert.equal(tailer.status().error, 'file not found');
  await writeFile(path, caddyLine({ ip: '192.0.2.50' }) + '\n');
  await waitFor(() => seen.length === 1, 'the new file');
  assert.equal(tailer.status().reading, true);
  await tailer.stop();
  assert.equal(tailer.status().reading, false);
});

/** Writes `total` numbered lines of varying length, rotating at the given line numbers. */
async function flow(
  path: string,
  total: number,
  rotateAt: Set<number>,
  rotate: (n: number) => Promise<void>,
) {
  for (let i = 0; i < total; i++) {
    if (rotateAt.has(i)) await rotate(i);
    await appendFile(path, caddyLine({ ip: '198.51.100.1', uri: `/n/${i}`, pad: 'p'.repeat(i % 37) }) + '\n');
    if (i % 25 === 0) await new Promise((r) => setImmediate(r));
  }
}

function assertAllSeen(seen: AccessEntry[], total: number) {
  const got = seen.map((e) => Number(e.path.slice(3))).sort((a, b) => a - b);
  assert.equal(got.length, total, `saw ${got.length} of ${total} lines`);
  got.forEach((n, i) => assert.equal(n, i, 'each line exactly once'));
}

test('rotation by rename while lines flow loses none', async () => {
  const { dir, path, tailer, seen } = await setup('rename', { fromStart: true });
  await writeFile(path, '');
  tailer.start();
  await waitFor(() => tailer.status().reading, 'tailer reading');
  const total = 3000;
  await flow(path, total, new Set([500, 1200, 1201, 2500]), async (i) => {
    // The writer does not wait for the tailer before renaming (unread lines stay in the old
    // file); it only lets the tailer notice the new file before the next rename, because two
    // renames before any look would hide a whole file from any follower (tail -F too).
    await rename(path, join(dir, `access.log.${i}`));
    await appendFile(path, '');
    await tailer.catchUp();
  });
  await waitFor(() => seen.length >= total, 'all lines');
  await tailer.catchUp();
  assertAllSeen(seen, total);
  assert.equal(tailer.status().parseErrors, 0);
});

test('rotation by truncation while lines flow loses none', async () => {
  const { path, tailer, seen } = await setup('truncate', { fromStart: true });
  await writeFile(path, '');
  tailer.start();
  await waitFor(() => tailer.status().reading, 'tailer reading');
  const total = 3000;
  await flow(path, total, new Set([400, 1000, 2200]), async (i) => {
    // copytruncate semantics: what was not read before the cut is gone for every reader,
    // so the rotation happens once the tailer has caught up; lines then flow at once.
    await waitFor(() => seen.length === i, `tailer caught up at ${i}`);
    await truncate(path, 0);
  });
  await waitFor(() => seen.length >= total, 'all lines');
  await tailer.catchUp();
  assertAllSeen(seen, total);
});

test('truncation refilled past the old offset before the tailer looks is still noticed', async () => {
  const { path, tailer, seen } = await setup('refill', {
    fromStart: true,
    watch: false,
    pollIntervalMs: 3_600_000,
  });
  await writeFile(path, caddyLine({ ts: 1700000000.000001, uri: '/n/0' }) + '\n');
  tailer.start();
  await waitFor(() => seen.length === 1, 'first line');
  await truncate(path, 0);
  await writeFile(
    path,
    caddyLine({ ts: 1700000000.000002, uri: '/n/1' }) +
      '\n' +
      caddyLine({ ts: 1700000000.000003, uri: '/n/2' }) +
      '\n',
  );
  await tailer.catchUp();
  assertAllSeen(seen, 3);
});

test('a rotated file that is deleted while held is drained and released', async () => {
  const { dir, path, tailer, seen } = await setup('delete', { fromStart: true, drainRotatedMs: 0 });
  await writeFile(path, caddyLine({ uri: '/n/0' }) + '\n');
  tailer.start();
  await waitFor(() => seen.length === 1, 'first line');
  await appendFile(path, caddyLine({ uri: '/n/1' }) + '\n');
  await rename(path, join(dir, 'old.log'));
  await writeFile(path, caddyLine({ uri: '/n/2' }) + '\n');
  await rm(join(dir, 'old.log'));
  await waitFor(() => seen.length === 3, 'both files');
  assertAllSeen(seen, 3);
});
