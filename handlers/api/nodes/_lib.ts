// Not a route (leading underscore): the path parameter of the node endpoints.
import { z } from 'zod';
import { NODE_ID } from '#lib/cluster/nodes.js';

export const nodeParams = z.object({ id: z.string().regex(NODE_ID, 'not a node id') });
