import { z } from 'zod';

export const auditParams = z.object({
  id: z
    .string()
    .regex(/^\d{1,15}$/, 'an audit entry id')
    .transform(Number),
});
