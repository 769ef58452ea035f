// What every area's wire shapes share: the registry of named shapes (each becomes
// `#/components/schemas/<id>` in the OpenAPI document), the error body, timestamps and list pages.
// route() checks handlers against the area files' schemas at compile time, and scripts/gen-openapi
// generates the document from them (lib/api/index.ts gathers them).
import { z } from 'zod';
import { ERROR_CODES } from '../http/errors.js';

export const components = z.registry<{ id: string; description?: string }>();

export const named = <T extends z.ZodType>(id: string, schema: T, description?: string): T => {
  components.add(schema, description ? { id, description } : { id });
  return schema;
};

export const ts = z.string().describe('ISO-8601 UTC timestamp');

export const errorSchema = named(
  'Error',
  z.object({
    error: z.string().describe('A human sentence'),
    code: z.enum(ERROR_CODES),
    details: z.array(z.looseObject({ field: z.string().optional(), message: z.string() })).optional(),
  }),
  'The error body of every failed request',
);

export const items = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });

export const page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), next_cursor: z.string().optional() });
