// `svc login <url>`: asks for an API token (read from standard input), checks it against the
// instance and keeps both in ~/.config/svc/credentials.json (0600).
import { createInterface } from 'node:readline';
import { command, CliFailure } from '../parser.js';
import { createClient } from '../../../client/index.js';
import { must, normaliseUrl, reach, saveCredentials } from '../remote.js';

/** One line of standard input; the prompt goes to stderr, and only when a person is typing. */
async function readToken(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('API token (make one under Settings > API tokens): ');
  const rl = createInterface({ input: process.stdin, terminal: false });
  try {
    for await (const line of rl) return line.trim();
  } finally {
    rl.close();
  }
  return '';
}

export const loginCommand = command({
  name: 'login',
  summary: 'keep the address of an instance and an API token for the client commands',
  usage: '<url>',
  args: { min: 1, max: 1, names: 'the instance address (https://svc.example.com)' },
  details:
    'The token is read from standard input (`echo "$TOKEN" | svc login URL` in a CI job).\n' +
    'It is checked against the instance, then kept in ~/.config/svc/credentials.json (mode 0600).\n' +
    'SVC_URL and SVC_TOKEN, when set, override the file.',
  async run({ args, io }) {
    const url = normaliseUrl(args[0]!);
    const token = await readToken();
    if (!token) throw new CliFailure('no token given on standard input');
    const api = createClient(url, { token });
    const me = must(await reach(url, () => api.GET('/api/auth/me')), 'the token was refused');
    const path = await saveCredentials({ url, token });
    io.out(`logged in to ${url} as ${me.user.username}; credentials in ${path}`);
  },
});
