// Not a route (leading underscore). The token is checked by its hash lookup (lib/auth/invitations.ts):
// any malformed or unknown value answers the same 404, so the shape is not validated here.
import { z } from 'zod';

export const tokenParams = z.object({ token: z.string().max(256) });
