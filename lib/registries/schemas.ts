// Request shapes of the registries endpoints.
import { z } from 'zod';

// A registry host as an image reference's first component writes it: a name with a dot, or a
// port, or `localhost` (anything else would be read as a Docker Hub path), lower case, no scheme.
const HOST =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/;

export const registryHostSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(260)
  .refine((h) => !/^[a-z]+:\/\//.test(h), 'a host, without https:// (host or host:port)')
  .refine((h) => HOST.test(h), 'a host name or address with an optional port, like registry.example:5000')
  .refine(
    (h) => h.includes('.') || h.includes(':') || h === 'localhost',
    'an image reference reads a first part without a dot or port as a Docker Hub path: name the registry as host.domain or host:port',
  )
  .refine((h) => {
    const port = /:(\d+)$/.exec(h)?.[1];
    return !port || (Number(port) >= 1 && Number(port) <= 65535);
  }, 'the port is 1..65535');

const username = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^\s:]+$/, 'no spaces or colons');
const password = z.string().min(1).max(4096);

export const registryBody = z.strictObject({ host: registryHostSchema, username, password });
export const registryPatch = z.strictObject({
  host: registryHostSchema.optional(),
  username: username.optional(),
  password: password.optional(),
});
export const registryParams = z.object({ id: z.string().min(1).max(64) });
