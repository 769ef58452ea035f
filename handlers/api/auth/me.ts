import { z } from 'zod';
import { userSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'self.read',
    summary: 'Who is calling, and how they authenticated',
    responses: {
      200: z.object({
        user: userSchema,
        via: z.enum(['session', 'token']),
        permissions: z
          .array(z.string())
          .describe(
            "What this request may do: the role's permissions, for a token intersected with its scopes",
          ),
      }),
    },
  },
  (_req, { principal, reply }) =>
    reply(200, {
      user: principal!.user,
      via: principal!.kind,
      permissions: sorted(principal!.permissions),
    }),
);

// Sorted once per set: a credential's permission set is shared by every request it makes
// (lib/auth/access.ts keeps one per role, scopes and apps), and this route is polled.
const sortedSets = new WeakMap<ReadonlySet<string>, readonly string[]>();
function sorted(permissions: ReadonlySet<string>): string[] {
  let list = sortedSets.get(permissions);
  if (list === undefined) sortedSets.set(permissions, (list = Object.freeze([...permissions].sort())));
  return list as string[];
}
