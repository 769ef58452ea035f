// Compile-time guarantees of route(): this file only builds when every `@ts-expect-error` below
// really is an error (an unused one fails tsc), so `npm run build` is the test. The runtime part
// checks what reply() answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Request, Response } from '@whatwg-node/fetch';
import { raw, route } from '#lib/http/route.js';
import type { Ctx } from '#lib/http/handler.js';

const item = z.object({ id: z.string(), count: z.number() });
const spec = {
  summary: 'typed',
  params: z.object({ id: z.string() }),
  query: z.object({ limit: z.coerce.number().default(5) }),
  body: z.object({ name: z.string() }),
  responses: { 200: item, 204: null, 201: raw('text/plain') },
} as const;

export const ok = route(spec, async (_req, { params, query, body, reply }) => {
  const id: string = params.id;
  const limit: number = query.limit;
  const name: string = body.name;
  return reply(200, { id: id + name, count: limit });
});

export const wrongShape = route(spec, async (_req, { reply }) => {
  // @ts-expect-error count must be a number
  return reply(200, { id: 'x', count: 'many' });
});

export const missingField = route(spec, async (_req, { reply }) => {
  // @ts-expect-error count is required by the schema
  return reply(200, { id: 'x' });
});

export const excessField = route(spec, async (_req, { reply }) => {
  // @ts-expect-error a literal with a property the schema does not declare
  return reply(200, { id: 'x', count: 1, secret: 'leak' });
});

export const undeclaredStatus = route(spec, async (_req, { reply }) => {
  // @ts-expect-error 202 is not a declared status
  return reply(202, { id: 'x', count: 1 });
});

export const bodyOnNoContent = route(spec, async (_req, { reply }) => {
  // @ts-expect-error 204 carries no body
  return reply(204, { id: 'x', count: 1 });
});

// @ts-expect-error a plain Response is not a TypedResponse: every answer goes through reply()
export const plainResponse = route(spec, async () => new Response('{}'));

export const wrongParam = route(spec, async (_req, { params, reply }) => {
  // @ts-expect-error no such path parameter
  const other: string = params.other;
  return reply(204, other === undefined ? null : null);
});

export const textBody = route(spec, (_req, { reply }) => reply(201, 'plain text'));

const ctx = (over: Partial<Ctx> = {}): Ctx =>
  ({
    params: { id: 'a' },
    query: { limit: 2 },
    body: { name: 'b' },
    env: {} as never,
    principal: null,
    client: { ip: '::1', secure: false, userAgent: null },
    requestId: 't',
    waitUntil() {},
    audit() {},
    ...over,
  }) as Ctx;

test('reply() answers JSON, no content, or the raw media type declared for the status', async () => {
  const req = new Request('http://x/');
  const a = await ok(req, ctx());
  assert.equal(a.status, 200);
  assert.match(a.headers.get('content-type')!, /^application\/json/);
  assert.deepEqual(await a.json(), { id: 'ab', count: 2 });
  const t = await textBody(req, ctx());
  assert.equal(t.status, 201);
  assert.equal(t.headers.get('content-type'), 'text/plain');
  assert.equal(await t.text(), 'plain text');
  const n = await wrongParam(req, ctx());
  assert.equal(n.status, 204);
  assert.equal(ok.spec, spec);
});
