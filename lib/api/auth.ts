// Wire shapes of operators, their permissions, API tokens and sessions.
import { z } from 'zod';
import { PERMISSION_NAMES, ROLES, type Permission } from '../auth/roles.js';
import { INVITATION_KINDS } from '../db/schema.js';
import { named, ts } from './common.js';

export const userSchema = named(
  'User',
  z.object({
    id: z.string(),
    username: z.string(),
    totp_enabled: z.boolean(),
    role: z.string().describe('owner, admin, deployer or viewer'),
    /** null: every app. */
    app_ids: z.array(z.string()).nullable(),
    sso: z.boolean().describe('Signs in with the identity provider (no password)'),
  }),
);

/** A permission name (lib/auth/roles.ts): what a token's scopes and `GET /api/auth/me` list. */
export const permissionSchema = named(
  'Permission',
  z.enum(PERMISSION_NAMES as [Permission, ...Permission[]]),
);

export const apiTokenSchema = named(
  'ApiToken',
  z.object({
    id: z.string(),
    name: z.string(),
    created_at: ts,
    expires_at: ts.nullable(),
    last_used_at: ts.nullable(),
    scopes: z.array(permissionSchema).nullable(),
    app_ids: z.array(z.string()).nullable(),
  }),
);

export const newApiTokenSchema = named(
  'NewApiToken',
  z.object({
    id: z.string(),
    name: z.string(),
    token: z.string(),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    scopes: z.array(permissionSchema).nullable(),
    app_ids: z.array(z.string()).nullable(),
  }),
  'A token just made: its value is shown this once',
);

export const operatorSchema = named(
  'Operator',
  z.object({
    id: z.string(),
    username: z.string(),
    role: z.enum(ROLES),
    app_ids: z
      .array(z.string())
      .nullable()
      .describe('null: every app; a list limits a deployer or viewer to those apps'),
    totp_enabled: z.boolean(),
    disabled: z.boolean(),
    sso: z.boolean().describe('Signs in with the OpenID Connect provider'),
    created_at: ts,
    last_login_at: ts.nullable(),
  }),
);

export const createdInvitationSchema = named(
  'CreatedInvitation',
  z.object({
    id: z.string(),
    kind: z.enum(INVITATION_KINDS),
    role: z.enum(ROLES).nullable(),
    app_ids: z.array(z.string()).nullable(),
    expires_at: ts,
    url: z.string().describe('The single-use link; shown only in this answer'),
  }),
);

export const invitationSchema = named(
  'Invitation',
  z.object({
    id: z.string(),
    kind: z.enum(INVITATION_KINDS),
    role: z.enum(ROLES).nullable(),
    app_ids: z.array(z.string()).nullable(),
    user_id: z.string().nullable().describe('A reset link: the operator whose password it sets'),
    username: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: ts,
    expires_at: ts,
    used_at: ts.nullable(),
    status: z.enum(['pending', 'used', 'expired']),
  }),
);

export const sessionSchema = named(
  'Session',
  z.object({
    id: z.string(),
    created_at: ts,
    last_seen_at: ts,
    expires_at: ts,
    ip: z.string().nullable(),
    user_agent: z.string().nullable(),
    current: z.boolean(),
  }),
);
