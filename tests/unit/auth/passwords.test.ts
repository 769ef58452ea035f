// Unit tests of lib/auth/passwords.ts: scrypt hashes with their parameters, and the hash gate's
// slots, priority lane and bounded queues.
// The HTTP behaviour is in tests/api/auth/; these run fast on purpose (`npm run mutation` runs
// them once per mutant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError } from '#lib/http/errors.js';
import { HashGate, hashPassword, verifyPassword, dummyHash } from '#lib/auth/passwords.js';

function deferred() {
  let resolve!: () => void;
  const p = new Promise<void>((r) => (resolve = r));
  return { p, resolve };
}

test('passwords: scrypt hashes carry their parameters and verify only the same password (NFC)', async () => {
  const h = await hashPassword('correct horse battery', 10);
  const parts = h.split('$');
  assert.equal(parts.length, 6);
  assert.deepEqual(parts.slice(0, 4), ['scrypt', '10', '8', '1']);
  assert.equal(Buffer.from(parts[4]!, 'base64url').length, 16);
  assert.equal(Buffer.from(parts[5]!, 'base64url').length, 32);
  assert.equal(await verifyPassword('correct horse battery', h), true);
  assert.equal(await verifyPassword('correct horse batterz', h), false);
  assert.equal(await verifyPassword('', h), false);
  assert.notEqual(await hashPassword('correct horse battery', 10), h, 'salted');
  // NFC: a composed and a decomposed é are the same password.
  const nfc = await hashPassword('caf\u00e9-passphrase', 10, 'priority');
  assert.equal(await verifyPassword('cafe\u0301-passphrase', nfc, 'priority'), true);
  // Parameters out of range or a foreign format are refused without hashing.
  const [, , , , salt, key] = parts;
  for (const bad of [
    `bcrypt$10$8$1$${salt}$${key}`,
    `scrypt$10$8$1$${salt}`,
    `scrypt$10$8$1$${salt}$${key}$x`,
    `scrypt$9$8$1$${salt}$${key}`,
    `scrypt$21$8$1$${salt}$${key}`,
    `scrypt$10$0$1$${salt}$${key}`,
    `scrypt$10$33$1$${salt}$${key}`,
    `scrypt$10$8$0$${salt}$${key}`,
    `scrypt$10$8$17$${salt}$${key}`,
    `scrypt$x$8$1$${salt}$${key}`,
    '',
  ])
    assert.equal(await verifyPassword('correct horse battery', bad), false, bad);
  // Other parameters in range still verify (raising the cost later keeps old hashes valid).
  assert.equal(
    await verifyPassword(
      'pw',
      `scrypt$20$8$1$${salt}$${key}`
        .replace(/\$20\$/, '$10$')
        .replace(key!, await rawScrypt('pw', salt!, 10, 8, 1)),
    ),
    true,
  );
  assert.equal(
    await verifyPassword('pw', `scrypt$11$2$2$${salt}$${await rawScrypt('pw', salt!, 11, 2, 2)}`),
    true,
  );
  assert.equal(
    await verifyPassword('pw', `scrypt$10$32$1$${salt}$${await rawScrypt('pw', salt!, 10, 32, 1)}`),
    true,
  );
  assert.equal(
    await verifyPassword('pw', `scrypt$10$1$16$${salt}$${await rawScrypt('pw', salt!, 10, 1, 16)}`),
    true,
  );
  // A truncated key never matches.
  assert.equal(
    await verifyPassword(
      'pw',
      `scrypt$10$8$1$${salt}$${(await rawScrypt('pw', salt!, 10, 8, 1)).slice(0, 20)}`,
    ),
    false,
  );
  const d = dummyHash(10).split('$');
  assert.deepEqual(d.slice(0, 4), ['scrypt', '10', '8', '1']);
  assert.equal(Buffer.from(d[4]!, 'base64url').length, 16);
  assert.equal(Buffer.from(d[5]!, 'base64url').length, 32);
  assert.notEqual(dummyHash(10), dummyHash(10));
  assert.equal(await verifyPassword('pw', dummyHash(10)), false);
});

async function rawScrypt(pw: string, salt: string, logN: number, r: number, p: number): Promise<string> {
  const { scrypt } = await import('node:crypto');
  return new Promise((res, rej) =>
    scrypt(
      pw.normalize('NFC'),
      Buffer.from(salt, 'base64url'),
      32,
      { N: 2 ** logN, r, p, maxmem: 256 * 2 ** logN * r + 1024 * 1024 },
      (e, k) => (e ? rej(e) : res(k.toString('base64url'))),
    ),
  );
}

test('hash gate: slots, a slot reserved for the priority lane, bounded queues answering 429 with Retry-After', async () => {
  const gate = new HashGate({ slots: 2, reserved: 1, maxWaiting: { normal: 1, priority: 1 } });
  const order: string[] = [];
  const job = (name: string, d: { p: Promise<void> }) => async () => {
    order.push(`start ${name}`);
    await d.p;
    order.push(`end ${name}`);
    return name;
  };
  const n1 = deferred();
  const r1 = gate.run('normal', job('n1', n1));
  assert.deepEqual(gate.stats(), { active: 1, waiting: { normal: 0, priority: 0 } });
  // A second stranger cannot take the reserved slot: it waits.
  const n2 = deferred();
  const r2 = gate.run('normal', job('n2', n2));
  assert.deepEqual(gate.stats(), { active: 1, waiting: { normal: 1, priority: 0 } });
  // A third is refused at once with a Retry-After of at least a second.
  await assert.rejects(
    gate.run('normal', async () => 'n3'),
    (e: unknown) =>
      e instanceof HttpError &&
      e.status === 429 &&
      e.code === 'rate_limited' &&
      Number(e.headers?.['retry-after']) >= 1,
  );
  // The operator's lane takes the reserved slot at once.
  const p1 = deferred();
  const rp = gate.run('priority', job('p1', p1));
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 1, priority: 0 } });
  const p2 = deferred();
  const rp2 = gate.run('priority', job('p2', p2));
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 1, priority: 1 } });
  await assert.rejects(
    gate.run('priority', async () => 'p3'),
    (e: unknown) => e instanceof HttpError && e.status === 429,
  );
  // When n1 ends, the waiting priority job goes first (into any slot).
  n1.resolve();
  assert.equal(await r1, 'n1');
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 1, priority: 0 } });
  assert.ok(order.includes('start p2'));
  assert.ok(!order.includes('start n2'));
  p1.resolve();
  assert.equal(await rp, 'p1');
  // Now only p2 (priority) runs: the stranger may take the unreserved slot.
  assert.deepEqual(gate.stats(), { active: 2, waiting: { normal: 0, priority: 0 } });
  assert.ok(order.includes('start n2'));
  n2.resolve();
  p2.resolve();
  assert.deepEqual([await r2, await rp2], ['n2', 'p2']);
  assert.deepEqual(gate.stats(), { active: 0, waiting: { normal: 0, priority: 0 } });
  // A failing job frees its slot too.
  await assert.rejects(
    gate.run('normal', async () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.deepEqual(gate.stats(), { active: 0, waiting: { normal: 0, priority: 0 } });
  // With nothing waiting and a slot free, a job starts at once; a stranger never queues behind an idle gate.
  const solo = new HashGate({ slots: 1, reserved: 0, maxWaiting: { normal: 0, priority: 0 } });
  assert.equal(await solo.run('normal', async () => 1), 1);
  assert.equal(await solo.run('priority', async () => 2), 2);
  const hold = deferred();
  const held = solo.run('priority', () => hold.p);
  await assert.rejects(
    solo.run('priority', async () => 3),
    (e: unknown) => e instanceof HttpError && e.status === 429,
  );
  hold.resolve();
  await held;
  // Retry-After grows with the queue and shrinks with parallelism (typical hash 250 ms at first).
  const big = new HashGate({ slots: 1, reserved: 0, maxWaiting: { normal: 8, priority: 8 } });
  const b = deferred();
  const waiting: Promise<unknown>[] = [big.run('normal', () => b.p)];
  for (let i = 0; i < 8; i++) waiting.push(big.run('normal', () => Promise.resolve()));
  await assert.rejects(
    big.run('normal', async () => 0),
    (e: unknown) => e instanceof HttpError && e.headers?.['retry-after'] === '3',
  );
  b.resolve();
  await Promise.all(waiting);
});
