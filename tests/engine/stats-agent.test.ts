// The cluster stats agent's script (lib/resources/agent.ts), run in a real busybox container over
// cgroup trees laid out as cgroup v2 (systemd's `docker-<id>.scope`) and v1 (cpuacct and memory
// hierarchies under a cgroup parent): one line per container with CPU, memory, inactive file and
// limit, read back by the parser the control plane uses; other directories are ignored.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { createEngine } from '#lib/docker/engine.js';
import { agentSpec, parseAgentLine, type AgentReading } from '#lib/resources/agent.js';
import { DOCKER_SOCKET } from '../_support/docker.js';

const A = 'a'.repeat(64);
const B = '0123456789abcdef'.repeat(4);
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'svc-cgroup-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

/** Runs the agent's command once over `root` mounted where the service mounts the host's cgroups. */
async function runAgent(root: string): Promise<Map<string, AgentReading>> {
  const engine = createEngine({ socketPath: DOCKER_SOCKET });
  const spec = agentSpec(engine, BASE_IMAGE, 1).spec.TaskTemplate.ContainerSpec;
  const c = await engine.docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: spec.Command,
    Env: spec.Env,
    Labels: { 'svc.test': 'stats-agent' },
    HostConfig: { Binds: [`${root}:/cg:ro`], NetworkMode: 'none' },
  });
  try {
    await c.start();
    await new Promise((r) => setTimeout(r, 1500));
    const raw = (await c.logs({ stdout: true, stderr: true, timestamps: true })) as Buffer;
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (b: Buffer) => chunks.push(b));
    engine.docker.modem.demuxStream(Object.assign(new PassThrough(), {}).end(raw) as never, out, out);
    await new Promise((r) => setImmediate(r));
    const found = new Map<string, AgentReading>();
    for (const line of Buffer.concat(chunks).toString().split('\n')) {
      const p = parseAgentLine(line);
      if (p) found.set(p[0], p[1]);
    }
    return found;
  } finally {
    await c.remove({ force: true });
  }
}

test('cgroup v2: a docker-<id>.scope directory becomes one line; other directories none', async (t) => {
  if (!(await needEngine(t))) return;
  const root = await tree({
    'cgroup.controllers': 'cpu memory',
    [`system.slice/docker-${A}.scope/cpu.stat`]: 'usage_usec 1500\nuser_usec 1000\n',
    [`system.slice/docker-${A}.scope/memory.current`]: '1000000',
    [`system.slice/docker-${A}.scope/memory.stat`]: 'anon 1\ninactive_file 200000\n',
    [`system.slice/docker-${A}.scope/memory.max`]: 'max',
    [`parent/${B}/cpu.stat`]: 'usage_usec 7\n',
    [`parent/${B}/memory.current`]: '5000',
    [`parent/${B}/memory.stat`]: 'inactive_file 0\n',
    [`parent/${B}/memory.max`]: '268435456',
    'system.slice/cron.service/cpu.stat': 'usage_usec 99\n',
  });
  const got = await runAgent(root);
  assert.deepEqual([...got.keys()].sort(), [B, A].sort());
  assert.deepEqual(
    { ...got.get(A), at: 0 },
    { cpuNs: 1_500_000, memoryBytes: 800_000, limitBytes: null, at: 0 },
  );
  assert.deepEqual(
    { ...got.get(B), at: 0 },
    { cpuNs: 7000, memoryBytes: 5000, limitBytes: 268_435_456, at: 0 },
  );
});

test('cgroup v1: the cpuacct and memory hierarchies under a cgroup parent', async (t) => {
  if (!(await needEngine(t))) return;
  const root = await tree({
    [`cpuacct/svc-node1/${A}/cpuacct.usage`]: '123456789',
    [`memory/svc-node1/${A}/memory.usage_in_bytes`]: '4096000',
    [`memory/svc-node1/${A}/memory.stat`]: 'cache 10\ntotal_inactive_file 96000\n',
    [`memory/svc-node1/${A}/memory.limit_in_bytes`]: '9223372036854771712',
    'cpuacct/user.slice/cpuacct.usage': '1',
  });
  const got = await runAgent(root);
  assert.deepEqual([...got.keys()], [A]);
  assert.deepEqual(
    { ...got.get(A), at: 0 },
    { cpuNs: 123_456_789, memoryBytes: 4_000_000, limitBytes: null, at: 0 },
  );
});
