// The tree is as Prettier (pinned in package.json, configured in .prettierrc.json) prints it;
// generated and vendored files are in .prettierignore. `npm run format` fixes what this finds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function prettier(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      root + 'node_modules/.bin/prettier',
      args,
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, out: `${stdout}${stderr}` });
      },
    );
  });
}

test('every source file is formatted (npm run format)', async () => {
  const { code, out } = await prettier(['--check', '--no-color', '--log-level=warn', '.']);
  const offending = out
    .split('\n')
    .map((l) => /^\[warn\] (.+)$/.exec(l)?.[1])
    .filter((f): f is string => !!f && !f.startsWith('Code style issues'));
  assert.equal(
    code,
    0,
    `prettier --check exited ${code}; not formatted (${offending.length}):\n${offending.join('\n') || out}`,
  );
});

test('the check covers the source and skips generated files', async () => {
  const { code, out } = await prettier([
    '--no-color',
    '--list-different',
    '--no-config',
    '--print-width=20',
    'lib/http/handler.ts',
    'api/openapi.json',
    'runtime/routes.gen.ts',
  ]);
  // With a width nobody writes at, a covered file differs; the ignored ones are never read.
  assert.equal(code, 1, out);
  assert.deepEqual(out.trim().split('\n'), ['lib/http/handler.ts']);
});
