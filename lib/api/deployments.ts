// Wire shapes of deployments and their log lines.
import { z } from 'zod';
import { DEPLOY_STATUSES, DEPLOY_TRIGGERS } from '../apps/deployment.js';
import { named, ts } from './common.js';

export const deploymentSchema = named(
  'Deployment',
  z.object({
    id: z.string(),
    app_id: z.string(),
    status: z.enum(DEPLOY_STATUSES),
    trigger: z.enum(DEPLOY_TRIGGERS),
    ref: z.string().nullable(),
    commit: z.string().nullable(),
    commit_subject: z.string().nullable(),
    image: z.string().nullable(),
    images: z.record(z.string(), z.string()).nullable(),
    image_digests: z
      .record(z.string(), z.string())
      .nullable()
      .describe(
        "Per service, the exact image it ran (sha256:...): a pulled image's registry digest, else the image id. A rollback runs exactly these",
      ),
    pull: z.boolean().describe('Every image was pulled again before deploying (pull: true, a deploy hook)'),
    error: z.string().nullable(),
    rollback_of: z.string().nullable(),
    delivery_id: z.string().nullable(),
    waiting: z.boolean(),
    created_by: z
      .string()
      .nullable()
      .describe("The username of the operator who asked for it; null for a forge's push"),
    config: z
      .object({ file: z.string(), applied: z.record(z.string(), z.unknown()) })
      .nullable()
      .describe(
        "What this deployment took from the repository's configuration file (svc.yaml): the file, and each applied setting by its path (services.web.port). Null: the commit had no file",
      ),
    created_at: ts,
    started_at: ts.nullable(),
    finished_at: ts.nullable(),
  }),
);

export const deploymentBody = named('DeploymentBody', z.object({ deployment: deploymentSchema }));

export const logLineSchema = named(
  'LogLine',
  z.object({ seq: z.number().int(), at: ts, stream: z.string(), line: z.string() }),
  'A build log line, as GET .../logs and the `build:<id>` topic carry it',
);
