// `svc apps`: the apps of the instance, with their status and newest deployment.
import { command } from '../parser.js';
import { must, reach, remote } from '../remote.js';
import { printTable } from '../print.js';

export const appsCommand = command({
  name: 'apps',
  summary: 'list the apps of the instance: name, status, source, newest deployment',
  usage: '[--json]',
  options: { json: { type: 'boolean', description: 'print JSON instead of a table' } },
  async run({ values, io }) {
    const { api, url } = await remote();
    const items = [];
    let cursor: string | undefined;
    do {
      const page = must(
        await reach(url, () =>
          api.GET('/api/apps', { params: { query: { limit: 500, ...(cursor ? { cursor } : {}) } } }),
        ),
        'listing apps',
      );
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    if (values.json) return io.out(JSON.stringify(items, null, 2));
    printTable(
      io,
      ['NAME', 'STATUS', 'SOURCE', 'DEPLOYED'],
      items.map((a) => [
        a.name,
        a.status,
        a.source.type === 'git' ? a.source.repo_url : a.source.type === 'image' ? a.source.image : 'compose',
        a.last_deployment ? `${a.last_deployment.status} ${a.last_deployment.created_at}` : '-',
      ]),
    );
  },
});
