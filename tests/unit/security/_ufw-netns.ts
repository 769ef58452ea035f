// Run by agent.test.ts inside a throwaway network namespace AND a private mount namespace:
// /etc/ufw is replaced by a temp copy the test controls, so what the agent sees of ufw does not
// depend on the host's own ufw (enabled or not), and enabling ufw here changes neither the
// host's netfilter rules nor its ufw configuration. Then it runs the real agent there.
//   node _ufw-netns.js <etc-ufw-copy> <agent.js> <out-dir> <fail2ban-socket> enable|as-is
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const [etcCopy, agent, out, socket, mode] = process.argv.slice(2);
if (!etcCopy || !agent || !out || !socket || (mode !== 'enable' && mode !== 'as-is')) {
  throw new Error('usage: _ufw-netns.js <etc-ufw-copy> <agent.js> <out-dir> <fail2ban-socket> enable|as-is');
}
await run('mount', ['--bind', etcCopy, '/etc/ufw']);
if (mode === 'enable') {
  await run('ufw', ['--force', 'enable']);
  await run('ufw', ['allow', '22/tcp']);
  await run('ufw', ['deny', 'from', '192.0.2.0/24']);
}
await run(process.execPath, [agent, '--out', out, '--fail2ban-socket', socket]);
