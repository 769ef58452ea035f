// The dashboard is a thin client: it imports nothing of the server, and only api.ts talks HTTP
// and only ws.ts opens the WebSocket, so swapping in the generated client touches one file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../../../dashboard/src/', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

test('dashboard sources import no server code; HTTP only in api.ts, the socket only in ws.ts; no raw HTML', () => {
  const all = files(src);
  assert.ok(all.length > 5);
  for (const f of all) {
    const text = readFileSync(f, 'utf8');
    const rel = f.slice(src.length);
    for (const m of text.matchAll(/from\s+'([^']+)'/g)) {
      assert.ok(
        !/(^|\/)(lib|handlers|runtime)\//.test(m[1]!) && !m[1]!.startsWith('node:'),
        `${rel} imports ${m[1]}`,
      );
    }
    if (rel !== 'api.ts')
      assert.doesNotMatch(text, /\bfetch\(|XMLHttpRequest/, `${rel} calls the API directly`);
    if (rel !== 'ws.ts') assert.doesNotMatch(text, /new WebSocket\(/, `${rel} opens its own socket`);
    assert.doesNotMatch(
      text,
      /dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write/,
      `${rel} writes raw HTML`,
    );
  }
});
