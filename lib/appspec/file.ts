// The app's configuration file in its repository (`svc.yaml`, `svc.yml` or `svc.json` at the root):
// one zod schema, from which the JSON Schema at /api/schemas/svc.json is generated, and a parser
// that names the line and column of every problem. YAML and JSON go through the same YAML 1.2
// parser (JSON is a subset of it), so both get positions.
import { z } from 'zod';
import type * as Yaml from 'yaml';
import { lazyRequire } from '../util/lazy.js';
import {
  buildSchema,
  envKeySchema,
  healthPathSchema,
  servicePortSchema,
  sleepAfterSchema,
} from '../apps/schemas.js';
import { SERVICE_NAME } from '../compose/parse.js';
import { MAX_REPLICAS } from '../cluster/settings.js';
import { splitWords } from '../compose/words.js';
import { JOB_CONCURRENCY, JOB_NAME, LIMITS } from '../jobs/model.js';

const yaml = lazyRequire<typeof Yaml>('yaml');

/** Looked for in this order at the repository's root; the first one found is the file. */
export const SVC_FILE_NAMES = ['svc.yaml', 'svc.yml', 'svc.json'] as const;
export const MAX_SVC_FILE_BYTES = 256 * 1024;

const commandSchema = z
  .union([z.string().min(1).max(2000), z.array(z.string().max(2000)).min(1).max(100)])
  .superRefine((c, ctx) => {
    if (typeof c === 'string' && !splitWords(c))
      ctx.addIssue({ code: 'custom', message: 'an unclosed quote' });
  })
  .describe(
    "The command the service runs instead of the image's: a string split like a shell would, or a list of words",
  );

export const svcServiceSchema = z.strictObject({
  port: servicePortSchema.optional().describe('The port the service listens on (the proxy routes to it)'),
  health_path: healthPathSchema
    .optional()
    .describe('The path the health gate probes (an HTTP 2xx/3xx passes)'),
  replicas: z
    .number()
    .int()
    .min(0)
    .max(MAX_REPLICAS)
    .optional()
    .describe('Containers of the service in cluster mode (one host runs one)'),
  command: commandSchema.optional(),
});

export const svcSecretSchema = z.strictObject({
  secret: z.literal(true),
  description: z.string().max(500).optional(),
});

export const svcEnvEntrySchema = z
  .union([z.string().max(64 * 1024), svcSecretSchema])
  .describe("A non-secret default (the app's own value wins), or a secret the app must have: {secret: true}");

/**
 * The file's keys, read and applied at deploy by lib/appspec/deploy.ts.
 */
export const svcFileShape = {
  $schema: z.string().max(2000).optional().describe('The JSON Schema this file follows (ignored)'),
  build: buildSchema.optional().describe("How the image is built (the app's build setting, for this commit)"),
  services: z
    .record(
      z.string().regex(SERVICE_NAME, 'a service name: lowercase letters, digits, "_" and "-"'),
      svcServiceSchema,
    )
    .optional()
    .describe('Per service: its port, health path, replicas and command'),
  release_command: commandSchema
    .optional()
    .describe(
      'Run once per deployment in the new image, before any new container takes traffic; a failure fails the deployment',
    ),
  jobs: z
    .array(
      z.strictObject({
        // The same bounds as POST /api/apps/{id}/jobs; the schedule and time zone are checked there too.
        name: z.string().regex(JOB_NAME, 'lower-case letters, digits and dashes'),
        schedule: z
          .string()
          .min(1)
          .max(200)
          .describe('cron (five fields) or @hourly, @daily, @weekly, @monthly'),
        command: commandSchema,
        service: z.string().regex(SERVICE_NAME, 'not a service name').nullable().optional(),
        timezone: z.string().min(1).max(64).optional(),
        timeout_s: z.number().int().min(LIMITS.timeoutS.min).max(LIMITS.timeoutS.max).optional(),
        concurrency: z.enum(JOB_CONCURRENCY).optional(),
        enabled: z.boolean().optional(),
      }),
    )
    .max(50)
    .optional()
    .describe(
      'Scheduled jobs, created or updated by name at each deploy (a job the file no longer names is kept)',
    ),
  sleep_after_minutes: sleepAfterSchema.nullable().optional(),
  env: z
    .record(envKeySchema, svcEnvEntrySchema)
    .optional()
    .describe('Variables: non-secret defaults, and the secrets the app must have'),
};

export const svcFileSchema = z
  .strictObject(svcFileShape)
  .describe("svc.yaml: an app's configuration in its repository");
export type SvcFile = z.infer<typeof svcFileSchema>;

/** The JSON Schema of the file, generated from the zod schema above (GET /api/schemas/svc.json). */
export function svcFileJsonSchema(): Record<string, unknown> {
  return {
    ...(z.toJSONSchema(svcFileSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>),
    $id: '/api/schemas/svc.json',
    title: 'svc.yaml',
  };
}

/** A problem of the file: `svc.yaml:3:9: services.web.port: ...` (line and column from 1). */
export class SvcFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: Array<{ line: number; column: number; path: string; message: string }>,
  ) {
    super(
      problems
        .slice(0, 5)
        .map((p) => `${file}:${p.line}:${p.column}: ${p.path ? `${p.path}: ` : ''}${p.message}`)
        .join('; '),
    );
  }
}

type Doc = Yaml.Document.Parsed;

/** Where a path of the document starts; for an unknown key, where that key is written. */
function offsetOf(doc: Doc, path: readonly PropertyKey[], key?: string): number {
  const Y = yaml();
  const pairOf = (map: Yaml.YAMLMap, seg: PropertyKey) =>
    map.items.find((p) => Y.isScalar(p.key) && String(p.key.value) === String(seg));
  let node: unknown = doc.contents;
  for (const seg of path) {
    const next = Y.isMap(node) ? pairOf(node, seg)?.value : Y.isSeq(node) ? node.items[Number(seg)] : null;
    if (!next) break;
    node = next;
  }
  if (key !== undefined && Y.isMap(node)) node = pairOf(node, key)?.key ?? node;
  const range = (node as { range?: [number, number, number] } | null)?.range;
  return range ? range[0] : 0;
}

/** Parses and checks a file's text: the file, or a SvcFileError naming line and column. */
export function parseSvcFile(name: string, text: string): SvcFile {
  if (Buffer.byteLength(text) > MAX_SVC_FILE_BYTES)
    throw new SvcFileError(name, [
      { line: 1, column: 1, path: '', message: `larger than ${MAX_SVC_FILE_BYTES} bytes` },
    ]);
  const Y = yaml();
  const lines = new Y.LineCounter();
  const doc = Y.parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const at = (offset: number) => {
    const p = lines.linePos(offset);
    return { line: p.line, column: p.col };
  };
  if (doc.errors.length)
    throw new SvcFileError(
      name,
      doc.errors.map((e) => ({ ...at(e.pos[0]), path: '', message: e.message.split('\n')[0]! })),
    );
  const value = doc.toJS({ maxAliasCount: 100 }) ?? {};
  const parsed = svcFileSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new SvcFileError(
    name,
    parsed.error.issues.map((i) => {
      // An unknown key, or a refused key of a map: the position of the key itself.
      const unknown = i.code === 'unrecognized_keys' ? i.keys[0] : undefined;
      const keyed = i.code === 'invalid_key' ? String(i.path[i.path.length - 1]) : unknown;
      const parent = i.code === 'invalid_key' ? i.path.slice(0, -1) : i.path;
      const path = [...i.path, ...(unknown !== undefined ? [unknown] : [])].map(String).join('.');
      return { ...at(offsetOf(doc, parent, keyed)), path, message: i.message };
    }),
  );
}

/** A service's command as exec words. */
export function commandWords(c: string | string[]): string[] {
  return typeof c === 'string' ? (splitWords(c) ?? [c]) : c;
}
