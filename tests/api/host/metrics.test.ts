// The host's metrics over the API with the typed client, on a fresh server running its background
// work: host vitals are never zero-filled (a step without a sample is absent), request points are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient } from '../../_support/server.js';
import { startTestApp, typedSession } from '../../_support/request.js';

test('host metrics of a fresh server: a step without a vitals sample is absent, never zeros; request points stay zero-filled', async () => {
  const fresh = await startTestApp({}, { background: true });
  try {
    const api = typedSession(fresh, await adminClient(fresh));
    const r = await api.GET('/api/host/metrics', { params: { query: { range: '1h' } } });
    assert.equal(r.response.status, 200, JSON.stringify(r.error));
    const { points, vitals } = r.data!;
    assert.equal(points.length, 360, 'request points keep their zero-filled gaps');
    assert.ok(vitals.length < points.length, `only the steps the sampler reached: ${vitals.length}`);
    for (const v of vitals) {
      assert.ok(v.mem_total_bytes > 0 && v.disk_total_bytes > 0, `a real reading: ${JSON.stringify(v)}`);
      assert.ok(
        points.some((p) => p.t === v.t),
        'aligned to a step of the points',
      );
    }
  } finally {
    await fresh.stop();
  }
});
