// The repository file's parser: every problem names its line and column (YAML and JSON alike).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSvcFile, SvcFileError } from '#lib/appspec/file.js';

const problem = (name: string, text: string) => {
  try {
    parseSvcFile(name, text);
  } catch (e) {
    assert.ok(e instanceof SvcFileError, String(e));
    return e.message;
  }
  assert.fail('accepted');
};

test('a valid file parses to its settings', () => {
  const f = parseSvcFile(
    'svc.yaml',
    'build:\n  type: dockerfile\nservices:\n  web:\n    port: 8080\n    command: node "my server.js"\nenv:\n  MODE: prod\n  KEY: {secret: true}\n',
  );
  assert.deepEqual(f.services, { web: { port: 8080, command: 'node "my server.js"' } });
  assert.deepEqual(f.env, { MODE: 'prod', KEY: { secret: true } });
});

test('a value out of range, an unknown key, a bad key and broken syntax name line and column', () => {
  assert.equal(
    problem('svc.yaml', 'services:\n  web:\n    port: 99999\n'),
    'svc.yaml:3:11: services.web.port: Too big: expected number to be <=65535',
  );
  assert.match(
    problem('svc.yaml', 'services:\n  web:\n    prot: 1\n'),
    /^svc\.yaml:3:5: services\.web\.prot: /,
  );
  assert.match(problem('svc.yaml', 'env:\n  A: x\n  1BAD: y\n'), /^svc\.yaml:3:3: env\.1BAD: /);
  assert.match(problem('svc.yaml', 'services: [\n'), /^svc\.yaml:\d+:\d+: /);
  assert.match(problem('svc.yaml', 'env:\n  X: {secret: false}\n'), /^svc\.yaml:2:6: env\.X: /);
});

test('svc.json gets positions too', () => {
  assert.match(
    problem('svc.json', '{\n  "services": {\n    "web": {"port": "x"}\n  }\n}\n'),
    /^svc\.json:3:21: services\.web\.port: /,
  );
});

test('the release command and jobs: words or a string; a bad job names its line', () => {
  const f = parseSvcFile(
    'svc.yaml',
    'release_command: npm run migrate\njobs:\n  - name: nightly\n    schedule: "0 3 * * *"\n    command: [node, cleanup.js]\n',
  );
  assert.equal(f.release_command, 'npm run migrate');
  assert.deepEqual(f.jobs, [{ name: 'nightly', schedule: '0 3 * * *', command: ['node', 'cleanup.js'] }]);
  assert.match(
    problem('svc.yaml', 'jobs:\n  - name: Bad_Name\n    schedule: "@daily"\n    command: [x]\n'),
    /^svc\.yaml:2:11: jobs\.0\.name: /,
  );
});
