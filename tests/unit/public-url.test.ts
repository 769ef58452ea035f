// SVC_PUBLIC_URL and SVC_CONTROL_DOMAIN: validated at boot, with the variable named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError } from '#lib/config.js';

test('SVC_PUBLIC_URL: an http(s) origin with an optional path prefix, trailing slashes dropped', () => {
  assert.equal(loadConfig({}).publicUrl, null);
  assert.equal(
    loadConfig({ SVC_PUBLIC_URL: 'https://paas.example.com' }).publicUrl,
    'https://paas.example.com',
  );
  assert.equal(
    loadConfig({ SVC_PUBLIC_URL: 'https://PaaS.Example.com:8443/svc//' }).publicUrl,
    'https://paas.example.com:8443/svc',
  );
  assert.equal(loadConfig({ SVC_PUBLIC_URL: 'http://[::1]:9393/' }).publicUrl, 'http://[::1]:9393');
  for (const bad of [
    'paas.example.com',
    'ftp://x.example',
    'https://user:pw@x.example',
    'https://x.example/?a=1',
    'https://x.example/#frag',
    'javascript:alert(1)',
    'https://',
  ]) {
    assert.throws(
      () => loadConfig({ SVC_PUBLIC_URL: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'SVC_PUBLIC_URL',
      bad,
    );
  }
});

test('SVC_CONTROL_DOMAIN: svc.<base domain> by default, validated when given', () => {
  assert.equal(loadConfig({}).controlDomain, null);
  assert.equal(loadConfig({ SVC_BASE_DOMAIN: 'apps.example.org' }).controlDomain, 'svc.apps.example.org');
  assert.equal(loadConfig({ SVC_CONTROL_DOMAIN: 'Panel.Example.org' }).controlDomain, 'panel.example.org');
  for (const bad of ['panel', 'a b.example', 'x.example/path', '-x.example']) {
    assert.throws(
      () => loadConfig({ SVC_CONTROL_DOMAIN: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'SVC_CONTROL_DOMAIN',
      bad,
    );
  }
});
