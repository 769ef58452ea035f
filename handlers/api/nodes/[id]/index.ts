import { z } from 'zod';
import { removeNode, requireClusterMode, updateNode } from '#lib/cluster/nodes.js';
import { route } from '#lib/http/route.js';
import { nodePatchSchema, nodeSchema } from '#lib/api/nodes.js';
import { nodeParams } from '../_lib.js';

export const PATCH = route(
  {
    permission: 'instance.admin',
    summary: "Change a node's availability (active, pause, drain) or its labels",
    description:
      'Draining moves its tasks to other nodes. `labels` replaces the operator labels; keys starting with `svc.` are reserved (400) and those the control plane set are kept.',
    params: nodeParams,
    body: nodePatchSchema,
    responses: { 200: z.object({ node: nodeSchema }) },
    audit: { action: 'node.updated', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    requireClusterMode(env);
    const { before, after } = await updateNode(env, params.id, body);
    audit({
      detail: {
        hostname: after.hostname,
        before: { availability: before.availability, labels: before.labels },
        after: { availability: after.availability, labels: after.labels },
      },
    });
    return reply(200, { node: after });
  },
);

export const DELETE = route(
  {
    permission: 'instance.admin',
    stepUp: true,
    summary: 'Remove a worker node that is down or drained from the swarm (409 otherwise, and for a manager)',
    params: nodeParams,
    responses: { 204: null },
    audit: { action: 'node.removed', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    requireClusterMode(env);
    const removed = await removeNode(env, params.id);
    audit({
      detail: { hostname: removed.hostname, status: removed.status, availability: removed.availability },
    });
    return reply(204);
  },
);
