// Wire shapes of the audit log: an entry and its diff.
import { z } from 'zod';
import { ACTOR_TYPES, AUDIT_OUTCOMES } from '../audit/index.js';
import { DIFF_STATUSES } from '../audit/kinds.js';
import { named, ts } from './common.js';

export const auditEntrySchema = named(
  'AuditEntry',
  z.object({
    id: z.string(),
    at: ts,
    actor: z
      .object({
        type: z.enum(ACTOR_TYPES),
        id: z.string().nullable(),
        name: z.string().nullable(),
        owner_id: z.string().nullable().optional().describe('A token: the id of the operator it acts for'),
      })
      .describe(
        "user: a session (or a sign-in attempt: id null when no operator matched); token: an API token, its id and name, and its owner's id; " +
          "system: no operator (a forge's webhook delivery, the host's `svc` CLI), named",
      ),
    action: z
      .string()
      .describe(
        '`<METHOD> <route pattern>` of the route that caused the entry, as in the OpenAPI paths: `PUT /api/apps/{id}/env`',
      ),
    target: z.object({
      type: z
        .string()
        .describe(
          'app, service, domain, user, session, api_token, notification_channel, instance, audit_entry...',
        ),
      id: z.string().nullable(),
    }),
    target_name: z
      .string()
      .nullable()
      .describe("The target's current name (an app's, a domain's hostname...); null when unknown or gone"),
    ip: z.string().nullable(),
    outcome: z.enum(AUDIT_OUTCOMES).describe('ok: answered 1xx-3xx; error otherwise (`status` has the code)'),
    summary: z
      .string()
      .describe("A short sentence: the route's summary (or the event's), with the target's current name"),
    revertible: z.boolean(),
    reverted_at: ts.nullable(),
    event: z
      .string()
      .nullable()
      .describe(
        'The finer event when the route does not say it all (`auth.totp_failed` on POST /api/auth/totp)',
      ),
    status: z
      .number()
      .int()
      .describe('The HTTP status of the answer (101: a WebSocket opened; 500: background work failed)'),
    user: z
      .object({ id: z.string(), username: z.string() })
      .nullable()
      .describe("The operator behind the actor (a token's owner); null for system entries"),
    via: z
      .string()
      .nullable()
      .describe('How the actor authenticated: session, token, password, totp, setup, webhook'),
    detail: z.record(z.string(), z.unknown()).nullable(),
    state_kind: z
      .string()
      .nullable()
      .describe('The kind of state recorded (app_env, domain...); null: not diffable'),
    reverted_by: z.string().nullable(),
    revert_of: z.string().nullable(),
    app_id: z.string().nullable().describe('The app the entry concerns; null: instance-wide'),
  }),
);

export const auditDiffSchema = named(
  'AuditDiff',
  z.object({
    rows: z.array(
      z.object({
        field: z.string(),
        status: z.enum(DIFF_STATUSES),
        before: z.unknown().optional(),
        after: z.unknown().optional(),
        masked: z.boolean().describe('A secret: its values are never shown'),
      }),
    ),
    changed_since: z.boolean().describe('The target changed after this entry'),
  }),
);
