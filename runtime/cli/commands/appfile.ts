// `svc export <app>` writes the app as a file (svc.yaml with name and source, secrets as ${KEY});
// `svc apply -f FILE [--dry-run]` creates or updates the app a file names, printing each change.
import { readFile } from 'node:fs/promises';
import { command, CliFailure, UsageError, type Io } from '../parser.js';
import { appId, must, reach, remote } from '../remote.js';

export const exportCommand = command({
  name: 'export',
  summary: 'print an app as a file: svc.yaml with its name and source, secrets as ${KEY} placeholders',
  usage: '<app> [--format yaml|json]',
  args: { min: 1, max: 1, names: 'the app' },
  options: { format: { type: 'string', value: 'yaml|json', description: 'the syntax (default yaml)' } },
  async run({ args, values, io }) {
    const format = values.format ?? 'yaml';
    if (format !== 'yaml' && format !== 'json') throw new UsageError('--format is yaml or json');
    const r = await remote();
    return reach(r.url, async () => {
      const id = await appId(r.api, args[0]!);
      const res = await r.api.GET('/api/apps/{id}/export', {
        params: { path: { id }, query: { format } },
        parseAs: 'text',
      });
      const text = must(res, 'exporting') as unknown as string;
      io.out(format === 'json' ? JSON.stringify(JSON.parse(text), null, 2) : text.replace(/\n$/, ''));
    });
  },
});

async function readSpec(path: string): Promise<unknown> {
  let text: string;
  try {
    text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
  } catch (e) {
    throw new CliFailure(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length) throw new CliFailure(`${path}: ${doc.errors[0]!.message.split('\n')[0]}`);
  return doc.toJS();
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const show = (v: unknown) => (v === null ? '(none)' : JSON.stringify(v));

function printChanges(
  io: Io,
  r: { changes: Array<{ path: string; before: unknown; after: unknown }> },
): void {
  if (!r.changes.length) io.out('no changes');
  for (const c of r.changes) io.out(`${c.path}: ${show(c.before)} -> ${show(c.after)}`);
}

export const applyCommand = command({
  name: 'apply',
  summary: 'create or update the app a file names; --dry-run prints the changes and changes nothing',
  usage: '-f FILE [--dry-run] [--json]',
  options: {
    file: {
      type: 'string',
      short: 'f',
      value: 'FILE',
      description: 'the file (YAML or JSON; - reads standard input)',
    },
    'dry-run': { type: 'boolean', description: 'print what would change, change nothing' },
    json: { type: 'boolean', description: "print the instance's answer as JSON" },
  },
  details: 'Nothing the file does not name is removed, unless the file says `prune: true`.',
  async run({ values, io }) {
    if (!values.file) throw new UsageError('-f FILE is missing');
    const spec = await readSpec(values.file);
    const r = await remote();
    const dryRun = values['dry-run'] === true;
    const res = must(
      await reach(r.url, () =>
        r.api.POST('/api/apps/apply', {
          params: { query: dryRun ? { dry_run: '1' } : {} },
          body: spec as never,
        }),
      ),
      'applying',
    );
    if (values.json) return io.out(JSON.stringify(res, null, 2));
    printChanges(io, res);
    const name = (spec as { name?: string }).name;
    io.out(dryRun ? 'dry run: nothing was changed' : `${res.created ? 'created' : 'applied to'} ${name}`);
    if (res.missing_secrets.length)
      io.err(
        `secrets to set before the next deploy: ${res.missing_secrets.join(', ')} (svc env ${name} set KEY=VALUE --secret)`,
      );
  },
});
