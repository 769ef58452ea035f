// Run by agent.test.ts inside a throwaway network namespace AND a private mount namespace:
// /etc/ufw is replaced by a temp copy, so enabling ufw changes neither the host's netfilter
// rules nor its ufw configuration. Then it runs the real agent there.
//   node _ufw-netns.js <etc-ufw-copy> <agent.js> <out-dir> <fail2ban-socket>
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const [etcCopy, agent, out, socket] = process.argv.slice(2);
if (!etcCopy || !agent || !out || !socket) throw new Error('usage: _ufw-netns.js <etc-ufw-copy> <agent.js> <out-dir> <fail2ban-socket>');
await run('mount', ['--bind', etcCopy, '/etc/ufw']);
await run('ufw', ['--force', 'enable']);
await run('ufw', ['allow', '22/tcp']);
await run('ufw', ['deny', 'from', '192.0.2.0/24']);
await run(process.execPath, [agent, '--out', out, '--fail2ban-socket', socket]);
