// Cluster mode's nodes (docs/cluster.md): the list, the join command and the node patch.
import { z } from 'zod';
import { named, ts, items } from './common.js';
import {
  LABEL_KEY,
  LABEL_VALUE,
  MAX_LABELS,
  NODE_AVAILABILITIES,
  NODE_ROLES,
  NODE_STATUSES,
  RESERVED_LABEL_PREFIX,
} from '../cluster/nodes.js';

export const nodeSchema = named(
  'Node',
  z.object({
    id: z.string(),
    hostname: z.string(),
    role: z.enum(NODE_ROLES),
    status: z.enum(NODE_STATUSES),
    availability: z.enum(NODE_AVAILABILITIES),
    addr: z.string().nullable().describe('The address the node is reached at in the swarm'),
    labels: z.record(z.string(), z.string()),
    engine_version: z.string().nullable(),
    cpus: z.number(),
    memory_bytes: z.number(),
    tasks: z.number().int().describe('How many tasks run on the node now'),
  }),
  'A node of the swarm (cluster mode)',
);

export const nodeListSchema = items(nodeSchema);

export const nodeLabelsSchema = z
  .record(
    z.string().regex(LABEL_KEY, 'a label key: letters, digits, ".", "_" and "-", at most 64'),
    z.string().regex(LABEL_VALUE, 'a label value: letters, digits and ._:/@+-, at most 128'),
  )
  .refine((l) => Object.keys(l).length <= MAX_LABELS, `at most ${MAX_LABELS} labels`)
  .refine(
    (l) => !Object.keys(l).some((k) => k.startsWith(RESERVED_LABEL_PREFIX)),
    `labels starting with "${RESERVED_LABEL_PREFIX}" are reserved for the control plane`,
  );

export const nodePatchSchema = z
  .strictObject({
    availability: z.enum(NODE_AVAILABILITIES).optional(),
    labels: nodeLabelsSchema
      .optional()
      .describe('Replaces the operator labels; labels starting with "svc." are reserved and kept'),
  })
  .refine(
    (b) => b.availability !== undefined || b.labels !== undefined,
    'nothing to change: give availability or labels',
  );

export const joinCommandSchema = named(
  'NodeJoinCommand',
  z.object({
    command: z.string().describe('One shell line a new Debian host with docker.io runs as root'),
    expires_at: ts,
  }),
  'How a new host joins the swarm as a worker',
);
