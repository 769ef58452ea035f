// Shared by the build-plan tests: detection over an in-memory tree, and the lines of a Dockerfile's
// final stage, which the contract holds to a non-root user, PORT, EXPOSE and an exec-form CMD.
import assert from 'node:assert/strict';
import {
  detect,
  isPlan,
  memoryFiles,
  PlanError,
  type MemoryTree,
  type NotDetectable,
  type Plan,
  type StackOverride,
} from '#lib/buildplan/index.js';

export async function plan(tree: MemoryTree, override?: StackOverride): Promise<Plan> {
  const r = await detect(memoryFiles(tree), override);
  assert.ok(isPlan(r), JSON.stringify(r));
  return r;
}

export async function notDetectable(tree: MemoryTree, override?: StackOverride): Promise<NotDetectable> {
  const r = await detect(memoryFiles(tree), override);
  assert.ok(!isPlan(r), `expected not_detectable, got a ${(r as Plan).stack} plan`);
  return r;
}

/** Detection must refuse with a PlanError naming file and field; returns it for more checks. */
export async function refused(
  tree: MemoryTree,
  expect: { file: string; field: string; reason?: RegExp },
  override?: StackOverride,
): Promise<PlanError> {
  let caught: unknown = null;
  try {
    const r = await detect(memoryFiles(tree), override);
    assert.fail(`expected a refusal, got ${JSON.stringify(r).slice(0, 300)}`);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof PlanError, String(caught));
  assert.equal(caught.file, expect.file, caught.message);
  assert.equal(caught.field, expect.field, caught.message);
  if (expect.reason) assert.match(caught.reason, expect.reason);
  return caught;
}

export const lines = (dockerfile: string) => dockerfile.split('\n').filter((l) => l.trim());

/** The instructions after the last FROM (that FROM included). */
export function finalStage(dockerfile: string): string[] {
  const all = lines(dockerfile);
  const at = all.map((l, i) => (l.startsWith('FROM ') ? i : -1)).filter((i) => i >= 0);
  return all.slice(at[at.length - 1]);
}

/** The contract's promises about every generated Dockerfile, checked line by line. */
export function assertContract(p: Plan): void {
  const all = lines(p.dockerfile);
  const final = finalStage(p.dockerfile);
  const user = final.filter((l) => l.startsWith('USER '));
  assert.equal(user.length, 1, p.dockerfile);
  assert.doesNotMatch(user[0]!, /^USER (root|0)\b/);
  assert.ok(
    final.some((l) => new RegExp(`^ENV .*\\bPORT=${p.port}\\b`).test(l)),
    p.dockerfile,
  );
  assert.ok(final.includes(`EXPOSE ${p.port}`), p.dockerfile);
  const cmd = final.filter((l) => l.startsWith('CMD '));
  assert.equal(cmd.length, 1);
  const argv = JSON.parse(cmd[0]!.slice(4)) as unknown;
  assert.ok(
    Array.isArray(argv) && argv.length > 0 && argv.every((a) => typeof a === 'string'),
    'CMD is in exec form',
  );
  for (const l of all) assert.doesNotMatch(l, /\\$/, 'no line continues');
  // Every image named is listed, and nothing else.
  const named = new Set<string>();
  const stages = new Set(all.map((l) => / AS ([a-z-]+)$/.exec(l)?.[1]).filter(Boolean));
  for (const l of all) {
    const ref = /^FROM (\S+)/.exec(l)?.[1] ?? /--from=(\S+)/.exec(l)?.[1];
    if (ref && !stages.has(ref)) named.add(ref);
  }
  assert.deepEqual([...named].sort(), [...p.images].sort());
  assert.ok(p.images.includes(p.runtime.image), `${p.runtime.image} among ${p.images}`);
}

/** Index of the first line matching re, failing when there is none. */
export function indexOf(dockerfile: string, re: RegExp): number {
  const i = lines(dockerfile).findIndex((l) => re.test(l));
  assert.ok(i >= 0, `${re} not in:\n${dockerfile}`);
  return i;
}
