// `svc logs <app> [-f] [--service S]`: the app's runtime logs over the API's WebSocket (topic
// `logs:<appId>`): its recent lines, and with -f every new one until interrupted.
import WebSocket from 'ws';
import { command, CliFailure, type Io } from '../parser.js';
import { appId, reach, remote } from '../remote.js';

/** Without -f, the replay is over once the stream has been quiet this long. */
const QUIET_MS = 1500;

interface LogEvent {
  service: string;
  stream: string;
  line: string;
  at: string;
}

function stream(
  url: string,
  token: string,
  topic: string,
  opts: { follow: boolean; onLine: (e: LogEvent) => void },
) {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/api/ws`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return new Promise<void>((resolve, reject) => {
    let quiet: NodeJS.Timeout | undefined;
    const settle = () => {
      if (opts.follow) return;
      clearTimeout(quiet);
      quiet = setTimeout(() => ws.close(), QUIET_MS);
    };
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe', topic }));
      settle();
    });
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as { type: string; topic?: string; data?: LogEvent; error?: string };
      if (m.type === 'error') return reject(new CliFailure(m.error ?? 'the instance refused the log stream'));
      if (m.type === 'event' && m.topic === topic && m.data) {
        opts.onLine(m.data);
        settle();
      }
    });
    ws.on('unexpected-response', (_req, res) =>
      reject(new CliFailure(`the log stream was refused: HTTP ${res.statusCode}`)),
    );
    ws.on('error', (e) => reject(new CliFailure(`cannot reach ${url}: ${e.message}`)));
    ws.on('close', () => {
      clearTimeout(quiet);
      resolve();
    });
    process.once('SIGINT', () => ws.close());
  });
}

export const logsCommand = command({
  name: 'logs',
  summary: "print an app's recent log lines; -f keeps following them",
  usage: '<app> [-f] [--service NAME] [--json]',
  args: { min: 1, max: 1, names: 'the app' },
  options: {
    follow: { type: 'boolean', short: 'f', description: 'keep printing new lines until interrupted' },
    service: { type: 'string', value: 'NAME', description: 'only the lines of this service' },
    json: { type: 'boolean', description: 'one JSON object a line: at, service, stream, line' },
  },
  async run({
    args,
    values,
    io,
  }: {
    args: string[];
    values: { follow?: boolean; service?: string; json?: boolean };
    io: Io;
  }) {
    const r = await remote();
    const id = await reach(r.url, () => appId(r.api, args[0]!));
    await stream(r.url, r.token, `logs:${id}`, {
      follow: values.follow === true,
      onLine: (e) => {
        if (values.service && e.service !== values.service) return;
        io.out(
          values.json
            ? JSON.stringify({ at: e.at, service: e.service, stream: e.stream, line: e.line })
            : `${e.service} | ${e.line}`,
        );
      },
    });
  },
});
