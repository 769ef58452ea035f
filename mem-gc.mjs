import v8 from 'node:v8'; import vm from 'node:vm';
import { mkdtempSync } from 'node:fs';
process.env.SVC_DATA_DIR = mkdtempSync('/tmp/l3-'); process.env.SVC_LOG_LEVEL = 'error'; process.env.SVC_SECURITY_MONITOR = 'false';
const mu = (l) => { const m = process.memoryUsage(); console.log(l.padEnd(14), 'rss', (m.rss/1048576).toFixed(1), 'heapTotal', (m.heapTotal/1048576).toFixed(1), 'heapUsed', (m.heapUsed/1048576).toFixed(1), 'ext', (m.external/1048576).toFixed(1)); };
const { loadConfig } = await import('/work/main/dist/lib/config.js');
const boot = await import('/work/main/dist/runtime/boot.js');
const env = await boot.createEnv(loadConfig());
const { startServer } = await import('/work/main/dist/runtime/server.js');
const running = await startServer(env, { port: 0 });
const { startBackground } = await import('/work/main/dist/runtime/background.js');
startBackground(env, running);
await fetch(running.url + '/api/health'); mu('health');
const mode = process.argv[2];
if (mode === 'gc') { v8.setFlagsFromString('--expose-gc'); const gc = vm.runInNewContext('gc'); v8.setFlagsFromString('--no-expose-gc'); gc(); mu('after gc'); }
if (mode === 'gcmajor') { v8.setFlagsFromString('--expose-gc'); const gc = vm.runInNewContext('gc'); gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }); mu('after gc'); }
await new Promise((r) => setTimeout(r, 1500)); mu('idle 1.5s');
for (let i = 0; i < 2000; i++) await fetch(running.url + '/api/health');
mu('after 2000 req');
await new Promise((r) => setTimeout(r, 1500)); mu('idle');
process.exit(0);
