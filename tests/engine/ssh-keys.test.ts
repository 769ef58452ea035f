// Deploy keys made with node:crypto, checked by OpenSSH's own ssh-keygen.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDeployKey, fingerprintOf } from '#lib/keys/ssh.js';
import { missing } from '../_support/ci.js';

const run = promisify(execFile);

async function haveSshKeygen(t: TestContext): Promise<boolean> {
  try {
    await run('ssh-keygen', ['-l', '-f', '/dev/null']).catch((e: { code?: unknown }) => {
      if (e.code === 'ENOENT') throw e;
    });
    return true;
  } catch {
    return missing(t, 'ssh-keygen is not installed (Debian: openssh-client)');
  }
}

test('ssh-keygen reads the private key back to the same public key and fingerprint', async (t) => {
  if (!(await haveSshKeygen(t))) return;
  const dir = await mkdtemp(join(tmpdir(), 'svc-keys-'));
  try {
    for (const comment of ['svc-deploy@app-01hx', 'deploy key for my app']) {
      const k = generateDeployKey(comment);
      assert.match(k.publicKey, /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43} /);
      assert.ok(k.publicKey.endsWith(` ${comment}`));
      assert.match(
        k.privateKey,
        /^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+\n-----END OPENSSH PRIVATE KEY-----\n$/,
      );
      assert.match(k.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
      const file = join(dir, 'id');
      await writeFile(file, k.privateKey, { mode: 0o600 });
      const { stdout: pub } = await run('ssh-keygen', ['-y', '-f', file]);
      assert.equal(pub.trim(), k.publicKey);
      const { stdout: fp } = await run('ssh-keygen', ['-l', '-E', 'sha256', '-f', file]);
      assert.equal(fp.trim(), `256 ${k.fingerprint} ${comment} (ED25519)`);
      await rm(file);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('keys are fresh each time; fingerprintOf matches; bad comments and lines are refused', () => {
  const a = generateDeployKey('a');
  const b = generateDeployKey('a');
  assert.notEqual(a.publicKey, b.publicKey);
  assert.notEqual(a.privateKey, b.privateKey);
  assert.equal(fingerprintOf(a.publicKey), a.fingerprint);
  assert.equal(fingerprintOf(a.publicKey.split(' ').slice(0, 2).join(' ')), a.fingerprint);
  for (const c of ['', 'a\nb', 'tab\there', 'x'.repeat(201), ' lead', 'trail ', 'caf\u00e9'])
    assert.throws(() => generateDeployKey(c), TypeError, JSON.stringify(c));
  for (const line of [
    'ssh-rsa AAAAB3NzaC1yc2E',
    'ssh-ed25519',
    'ssh-ed25519 !!!',
    `ssh-ed25519 ${Buffer.from('short').toString('base64')}`,
  ])
    assert.throws(() => fingerprintOf(line), TypeError, line);
});
