// The Nodes page in Debian's chromium against a control plane in cluster mode over a real
// three-node swarm: the navigation offers it, the table shows the three nodes, draining one (after
// the confirmation) shows it drained and the swarm agrees, and "Join a node" shows the command
// after a step-up. axe on the page. The app page then lists a service's tasks by node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { needChromium, launchChromium, withFailureShot, axe } from '../_support/browser.js';
import { needCluster, startTestCluster, unpullable, type ClusterNode } from '../_support/cluster.js';
import { ensureRegistryImage } from '../_support/registryimage.js';
import { startTestServer, adminClient, ADMIN } from '../_support/server.js';
import { BASE_IMAGE } from '../_support/docker.js';
import { LABEL_APP, LABEL_NETWORK, networkName, ownerLabels, swarmServiceName } from '#lib/docker/index.js';
import { serviceLabels } from '#lib/cluster/spec.js';

const WAIT = { timeout: 60_000 };

test('the Nodes page lists three nodes, drains one and shows the join command after a step-up', async (t) => {
  if (!(await needChromium(t)) || !(await needCluster(t))) return;
  const registryImage = await ensureRegistryImage();
  const cluster = await startTestCluster({ size: 3 });
  t.after(() => cluster.close());
  const [node1, , node3] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
  await cluster.loadImages([registryImage], [node1]);
  const s = await startTestServer({
    SVC_CLUSTER: 'swarm',
    SVC_DOCKER_SOCKET: node1.socketPath,
    SVC_IMAGE_MAP: JSON.stringify({ 'registry:2': registryImage }),
  });
  t.after(() => s.stop());
  // The trust file the control plane wrote on this host for its registry (the nodes share /etc).
  t.after(() => rmSync(`/etc/docker/certs.d/${node1.addr}:5000`, { recursive: true, force: true }));
  await adminClient(s);
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('dialog', (d) => void d.accept());
  await withFailureShot(page, 'nodes', async () => {
    await page.goto(s.url + '/');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Nodes' }).click(WAIT);
    await page.getByRole('heading', { name: 'Nodes', level: 1 }).waitFor(WAIT);
    const rows = page.locator('tbody tr');
    await page.getByTestId('node-node3').waitFor(WAIT);
    assert.equal(await rows.count(), 3);
    const row3 = page.getByTestId('node-node3');
    assert.equal(await row3.getByTestId('availability').textContent(), 'active');
    await row3.getByRole('button', { name: 'Drain' }).click();
    await row3.getByRole('button', { name: 'Activate' }).waitFor(WAIT);
    assert.equal(await row3.getByTestId('availability').textContent(), 'drain');
    const spec = ((await node1.docker.getNode(node3.id).inspect()) as any).Spec;
    assert.equal(spec.Availability, 'drain');
    await axe(page, 'nodes');

    await page.getByRole('button', { name: 'Join a node' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor(WAIT);
    await dialog.getByLabel('Password').fill(ADMIN.password);
    await dialog.getByRole('button', { name: 'Verify' }).click();
    const line = await page.getByTestId('join-command-line').textContent(WAIT);
    assert.match(line ?? '', /docker swarm join --token 'SWMTKN-1-/);

    // The app page lists a service's tasks and the node of each (two, kept off the drained node).
    const c = await adminClient(s);
    const made = await c.req('POST', '/api/apps', {
      name: 'tasks',
      source: { type: 'image', image: BASE_IMAGE },
    });
    assert.equal(made.status, 201, made.text);
    const engine = s.env.engine;
    await node1.docker.createNetwork({
      Name: networkName('tasks'),
      Driver: 'overlay',
      Attachable: true,
      Labels: { ...ownerLabels(engine), [LABEL_APP]: 'tasks', [LABEL_NETWORK]: 'default' },
    });
    await node1.docker.createService({}, {
      Name: swarmServiceName('tasks', 'app'),
      Labels: serviceLabels(engine, 'tasks', 'app', 'dep1'),
      TaskTemplate: {
        ContainerSpec: { Image: unpullable(BASE_IMAGE), Command: ['sleep', '3600'] },
        Networks: [{ Target: networkName('tasks') }],
      },
      Mode: { Replicated: { Replicas: 2 } },
      EndpointSpec: { Mode: 'dnsrr' },
    } as any);
    for (const until = Date.now() + 60_000; Date.now() < until;) {
      const running = (await node1.docker.listTasks({
        filters: { service: [swarmServiceName('tasks', 'app')], 'desired-state': ['running'] },
      })) as Array<{ Status?: { State?: string } }>;
      if (running.filter((x) => x.Status?.State === 'running').length === 2) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.goto(`${s.url}/apps/${encodeURIComponent(made.body.app.id)}`);
    const tasks = page.getByTestId('service-row').filter({ hasText: 'app' }).getByTestId('service-tasks');
    await tasks.getByText('running').nth(1).waitFor(WAIT);
    const shown = (await tasks.locator('li .mono').allTextContents()).sort();
    assert.equal(shown.length, 2);
    assert.ok(
      shown.every((n) => n === 'node1' || n === 'node2'),
      shown.join(', '),
    );
  });
});
