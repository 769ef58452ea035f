import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appSubnets, createSubnetGuard, type NetworkInfo } from '#lib/net/engine-subnets.js';

test('subnet guard: IPv4, IPv4-mapped and IPv6 peers inside engine subnets are refused; the control network and loopback are not', async () => {
  const nets: NetworkInfo[] = [
    { Name: 'bridge', IPAM: { Config: [{ Subnet: '172.17.0.0/16' }, { Subnet: 'fd00:dead:beef::/64' }] } },
    { Name: 'app-x', Labels: { 'svc.app': 'x' }, IPAM: { Config: [{ Subnet: '172.30.4.0/24' }] } },
    {
      Name: 'svc-control',
      Labels: { 'svc.role': 'control' },
      IPAM: { Config: [{ Subnet: '172.19.0.0/16' }] },
    },
    { Name: 'host', IPAM: { Config: [] } },
    { Name: 'none', IPAM: null },
  ];
  assert.deepEqual(appSubnets(nets).sort(), ['172.17.0.0/16', '172.30.4.0/24', 'fd00:dead:beef::/64']);
  let current = nets;
  const guard = createSubnetGuard(async () => current);
  assert.equal(guard.refuses('172.17.0.2'), false, 'nothing is refused before the engine is read');
  await guard.refresh();
  for (const a of ['172.17.0.2', '::ffff:172.17.0.1', '172.30.4.9', 'fd00:dead:beef::2', 'FD00:DEAD:BEEF::2'])
    assert.equal(guard.refuses(a), true, a);
  for (const a of [
    '127.0.0.1',
    '::1',
    '::ffff:127.0.0.1',
    '172.19.0.1',
    '172.30.5.1',
    '10.0.0.1',
    'fd00:dead:bef0::2',
    undefined,
    'garbage',
  ])
    assert.equal(guard.refuses(a), false, String(a));
  // A removed network is no longer refused after the next refresh.
  current = nets.filter((n) => n.Name !== 'app-x');
  await guard.refresh();
  assert.equal(guard.refuses('172.30.4.9'), false);
  // An engine that does not answer keeps the previous list.
  current = null as never;
  await assert.rejects(guard.refresh());
  assert.equal(guard.refuses('172.17.0.2'), true);
});

test('subnet guard: listeners hear of a refresh that changed the list (the proxy follows it), not of one that did not', async () => {
  let current: NetworkInfo[] = [{ Name: 'app-x', IPAM: { Config: [{ Subnet: '172.30.4.0/24' }] } }];
  const guard = createSubnetGuard(async () => current);
  const heard: string[][] = [];
  const off = guard.onChange((s) => heard.push(s));
  await guard.refresh();
  await guard.refresh();
  current = [...current, { Name: 'app-y', IPAM: { Config: [{ Subnet: '172.30.5.0/24' }] } }];
  await guard.refresh();
  assert.deepEqual(heard, [['172.30.4.0/24'], ['172.30.4.0/24', '172.30.5.0/24']]);
  off();
  current = [];
  await guard.refresh();
  assert.equal(heard.length, 2);
});
