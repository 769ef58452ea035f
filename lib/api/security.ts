// Wire shapes of the security views: posture, firewall, fail2ban and request traffic.
import { z } from 'zod';
import { FIREWALL_BACKENDS } from '../security/snapshot.js';
import { ANOMALY_KINDS } from '../traffic/monitor.js';
import { POSTURE_CODES, POSTURE_STATUSES } from '../security/posture.js';
import { named, ts } from './common.js';

export const postureItemSchema = named(
  'PostureItem',
  z.object({
    code: z.enum(POSTURE_CODES),
    status: z.enum(POSTURE_STATUSES),
    title: z.string(),
    reason: z.string(),
    fix: z.string(),
    app: z.string().optional(),
    service: z.string().optional(),
  }),
);

const unavailable = z.object({ available: z.literal(false), reason: z.string() });

export const firewallStateSchema = z.union([
  z.object({
    available: z.literal(true),
    stale: z.boolean(),
    generated_at: ts,
    backend: z.enum(FIREWALL_BACKENDS).nullable(),
    active: z.boolean(),
    rules: z.array(z.string()),
  }),
  unavailable,
]);

export const fail2banStateSchema = z.union([
  z.object({
    available: z.literal(true),
    stale: z.boolean(),
    generated_at: ts,
    jails: z.array(
      z.object({
        name: z.string(),
        currently_banned: z.number().int(),
        total_banned: z.number().int(),
        banned_ips: z.array(z.string()),
      }),
    ),
  }),
  unavailable,
]);

export const trafficSnapshotSchema = named(
  'TrafficSnapshot',
  z.object({
    enabled: z.boolean(),
    window_seconds: z.number(),
    request_threshold: z.number(),
    error_threshold: z.number(),
    tracked_ips: z.number().int(),
    top_talkers: z.array(
      z.object({ ip: z.string(), requests: z.number().int(), errors: z.number().int(), last_seen: ts }),
    ),
    recent_requests: z.array(
      z.object({
        at: ts,
        ip: z.string(),
        host: z.string(),
        method: z.string(),
        path: z.string(),
        status: z.number().int(),
      }),
    ),
    recent_anomalies: z.array(
      z.object({
        at: ts,
        ip: z.string(),
        kind: z.enum(ANOMALY_KINDS),
        count: z.number().int(),
        window_seconds: z.number(),
        detail: z.string(),
        notified: z.boolean(),
      }),
    ),
  }),
);
