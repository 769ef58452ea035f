// The host side of a bridge network (lib/docker/bridge.ts): an engine may report a bridge's IPAM
// config with a subnet and no gateway, so the address is the interface's, else the gateway field,
// else the subnet's first host. Checked on shapes the engine answers, and on this engine's own
// default bridge (the host's docker0 address, whatever its IPAM config says).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bridgeHostAddress, bridgeInterface, firstHost } from '#lib/docker/bridge.js';
import { createEngine } from '#lib/docker/index.js';
import { DOCKER_SOCKET, needDocker } from '../../_support/docker.js';

const run = promisify(execFile);

const iface = (address: string) => ({
  address,
  netmask: '255.255.0.0',
  family: 'IPv4' as const,
  mac: '02:42:00:00:00:00',
  internal: false,
  cidr: `${address}/16`,
});

test('the interface address wins, then the gateway field, then the first host of the subnet', () => {
  const noGateway = {
    Id: 'a4555b87311163e1d5423673cf1f675343256c089bb69ac0b9e7d1dfa8bb5c3c',
    Driver: 'bridge',
    Options: { 'com.docker.network.bridge.name': 'docker0' },
    IPAM: { Config: [{ Subnet: '172.17.0.0/16' }] },
  };
  assert.equal(bridgeInterface(noGateway), 'docker0');
  assert.equal(bridgeHostAddress(noGateway, { docker0: [iface('172.17.0.1')] }), '172.17.0.1');
  // An address outside the subnet on the interface is not the bridge's.
  assert.equal(bridgeHostAddress(noGateway, { docker0: [iface('10.9.9.9')] }), '172.17.0.1');
  assert.equal(bridgeHostAddress(noGateway, {}), '172.17.0.1', 'no interface here: the first host');
  const custom = {
    Id: 'f00dfeedbeef0123456789',
    Driver: 'bridge',
    IPAM: { Config: [{ Subnet: '10.30.0.0/24', Gateway: '10.30.0.254' }] },
  };
  assert.equal(bridgeInterface(custom), 'br-f00dfeedbeef');
  assert.equal(bridgeHostAddress(custom, {}), '10.30.0.254');
  assert.equal(bridgeHostAddress(custom, { 'br-f00dfeedbeef': [iface('10.30.0.7')] }), '10.30.0.7');
  assert.equal(bridgeHostAddress({ Driver: 'bridge', IPAM: { Config: [{ Subnet: 'fd00::/64' }] } }), null);
  assert.equal(bridgeInterface({ Driver: 'overlay', Id: 'x' }), null);
  assert.deepEqual(['192.168.7.0/24', '10.0.0.0/8', '172.18.5.0/20', '10.1.2.3/32'].map(firstHost), [
    '192.168.7.1',
    '10.0.0.1',
    '172.18.0.1',
    null,
  ]);
});

test("this engine's default bridge: the host's own address on it, with or without a container on it", async (t) => {
  if (!(await needDocker(t))) return;
  const engine = createEngine({ socketPath: DOCKER_SOCKET });
  const net = await engine.docker.getNetwork('bridge').inspect();
  const name = bridgeInterface(net)!;
  // What the kernel says, whatever the link's state (node lists only interfaces that are up and
  // running: a bridge without a container has no carrier, and the fallback must still be right).
  const { stdout } = await run('ip', ['-o', '-4', 'addr', 'show', 'dev', name]);
  const own = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(stdout)?.[1];
  assert.ok(own, `the host has ${name}: ${stdout}`);
  assert.equal(bridgeHostAddress(net), own);
  assert.equal(bridgeHostAddress(net, {}), own, 'from the engine alone');
});
