// Wire shapes of add-ons (vetted compose templates).
import { z } from 'zod';
import { named } from './common.js';

export const addonParamSchema = z.object({
  key: z.string(),
  label: z.string(),
  default: z.string().nullable(),
  secret: z.boolean(),
  generated: z.boolean(),
});

const addonFields = {
  id: z.string(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  services: z.array(z.string()),
  images: z.array(z.string()),
  footprint_mb: z.number(),
  params: z.array(addonParamSchema),
};

export const addonSchema = named(
  'Addon',
  z.object(addonFields),
  'A vetted compose template: what it runs, its footprint and its parameters',
);

export const addonWithComposeSchema = named(
  'AddonWithCompose',
  z.object({ ...addonFields, compose: z.string() }),
  'An add-on read alone: with its compose template',
);
