// `svc env <app>`: the app's variables, secrets masked; `set KEY=VALUE [--secret]`, `unset KEY`.
import { command, UsageError, type Io } from '../parser.js';
import { appId, must, reach, remote, type Remote } from '../remote.js';
import { printTable } from '../print.js';

const MASK = '********';

async function list(r: Remote, id: string, json: boolean, io: Io): Promise<void> {
  const set = must(await r.api.GET('/api/apps/{id}/env', { params: { path: { id } } }), 'reading the env');
  // The API never answers a secret's value; the mask says one is set.
  const items = set.items.map((i) => ({ key: i.key, secret: i.secret, value: i.secret ? null : i.value }));
  if (json) return io.out(JSON.stringify(items, null, 2));
  printTable(
    io,
    ['KEY', 'VALUE'],
    items.map((i) => [i.key, i.secret ? MASK : (i.value ?? '')]),
  );
}

async function set(r: Remote, id: string, pair: string, secret: boolean, io: Io): Promise<void> {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new UsageError(`give KEY=VALUE, not ${JSON.stringify(pair.slice(0, 64))}`);
  const key = pair.slice(0, eq);
  const r2 = await r.api.PUT('/api/apps/{id}/env/{key}', {
    params: { path: { id, key } },
    body: { value: pair.slice(eq + 1), secret },
  });
  must(r2, `setting ${key}`);
  io.out(
    `${key} ${r2.response.status === 201 ? 'added' : 'set'}${secret ? ' (secret)' : ''}; deploy to apply it`,
  );
}

async function unset(r: Remote, id: string, key: string, io: Io): Promise<void> {
  const res = await r.api.DELETE('/api/apps/{id}/env/{key}', { params: { path: { id, key } } });
  if (!res.response.ok) must(res as never, `removing ${key}`);
  io.out(`${key} removed; deploy to apply it`);
}

export const envCommand = command({
  name: 'env',
  summary: "list an app's variables (secrets masked), set one, or unset one",
  usage: '<app> [set KEY=VALUE [--secret] | unset KEY] [--json]',
  args: { min: 1, max: 3, names: 'the app' },
  options: {
    secret: { type: 'boolean', description: 'with set: keep the value secret (sealed, never shown again)' },
    json: { type: 'boolean', description: 'list as JSON' },
  },
  async run({ args, values, io }) {
    const [app, action, arg] = args as [string, string?, string?];
    if (action !== undefined && action !== 'set' && action !== 'unset')
      throw new UsageError(`unknown action ${JSON.stringify(action.slice(0, 32))} (set or unset)`);
    if (action && arg === undefined)
      throw new UsageError(action === 'set' ? 'KEY=VALUE is missing' : 'KEY is missing');
    if (!action && values.secret) throw new UsageError('--secret goes with set');
    const r = await remote();
    return reach(r.url, async () => {
      const id = await appId(r.api, app);
      if (action === 'set') return set(r, id, arg!, values.secret === true, io);
      if (action === 'unset') return unset(r, id, arg!, io);
      return list(r, id, values.json === true, io);
    });
  },
});
