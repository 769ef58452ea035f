import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appSubnets,
  createSubnetGuard,
  refusesForwarded,
  type NetworkInfo,
} from '#lib/net/engine-subnets.js';
import { buildBlockList } from '#lib/http/client-address.js';

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

test('subnet guard: a request a trusted proxy forwarded for a client on an app network is refused; the header from anyone else moves nothing', async () => {
  const guard = createSubnetGuard(async () => [
    { Name: 'app-x', IPAM: { Config: [{ Subnet: '172.30.4.0/24' }] } },
  ]);
  await guard.refresh();
  const trusted = buildBlockList(['127.0.0.1', '::1']);
  // Caddy on loopback, X-Forwarded-For set to its connection's peer.
  assert.equal(refusesForwarded(guard, trusted, '127.0.0.1', '172.30.4.9'), true);
  assert.equal(refusesForwarded(guard, trusted, '::ffff:127.0.0.1', '172.30.4.9'), true);
  assert.equal(refusesForwarded(guard, trusted, '127.0.0.1', ['10.9.9.9', '172.30.4.9']), true);
  assert.equal(refusesForwarded(guard, trusted, '127.0.0.1', '203.0.113.5'), false);
  assert.equal(refusesForwarded(guard, trusted, '127.0.0.1', undefined), false);
  // A client that is not a trusted proxy cannot claim an address (nor would it want to be refused).
  assert.equal(refusesForwarded(guard, trusted, '203.0.113.5', '172.30.4.9'), false);
});
