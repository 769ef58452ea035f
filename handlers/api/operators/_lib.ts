// Not a route (leading underscore): schemas and helpers shared by the operator endpoints.
import { z } from 'zod';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { ROLES } from '#lib/auth/roles.js';
import { INVITE_HOURS_MAX } from '#lib/auth/invitations.js';

export const operatorParams = z.object({ id: z.string().regex(ID_PATTERN, 'not an operator id') });
export const invitationParams = z.object({ id: z.string().regex(ID_PATTERN, 'not an invitation id') });

const appIds = z.array(z.string().min(1).max(64)).max(500).nullable();

export const patchBody = z
  .strictObject({
    role: z.enum(ROLES).optional(),
    app_ids: appIds.optional(),
    disabled: z.boolean().optional(),
  })
  .refine(
    (b) => b.role !== undefined || b.app_ids !== undefined || b.disabled !== undefined,
    'nothing to change: give role, app_ids or disabled',
  );

export const inviteBody = z.strictObject({
  role: z.enum(ROLES),
  app_ids: appIds.optional(),
  expires_in_hours: z.number().int().min(1).max(INVITE_HOURS_MAX).optional(),
});

export const resetBody = z
  .strictObject({ expires_in_hours: z.number().int().min(1).max(INVITE_HOURS_MAX).optional() })
  .optional();
