// The names a service's route asks the control plane's resolver for (lib/proxy/resolver.ts):
// `<port>.<service>.<app id>.svc.internal.`, rooted so that no search domain is tried. The port
// is part of the name because Caddy caches an answer per name and port: one name per cache
// entry lets the resolver tell exactly when Caddy has asked again after a change.
import { createHash } from 'node:crypto';

export const LOOKUP_ZONE = 'svc.internal.';

/**
 * How long Caddy keeps an answer before it asks again (its `refresh`). A switch is done once
 * Caddy has asked again or this has passed since the last answer it may still hold, so it is
 * also the longest a switch waits; each busy route costs one lookup per period.
 */
export const LOOKUP_REFRESH_MS = 250;

/**
 * A service name as a DNS label. Service names are already lower-case letters, digits, `_` and
 * `-`, at most 63 characters; Go's resolver (Caddy's) refuses a label ending in `-`, so such a
 * name is replaced by a digest of it.
 */
export function serviceLabel(service: string): string {
  return service.endsWith('-')
    ? `h${createHash('sha256').update(service).digest('hex').slice(0, 20)}`
    : service;
}

export function lookupName(appId: string, service: string, port: number): string {
  return `${port}.${serviceLabel(service)}.${appId}.${LOOKUP_ZONE}`;
}

/** The parts of a name in the zone (lower-cased), or null for any other name. */
export function parseLookupName(name: string): { port: number; label: string; appId: string } | null {
  if (!name.endsWith(`.${LOOKUP_ZONE}`)) return null;
  const parts = name.slice(0, -LOOKUP_ZONE.length - 1).split('.');
  if (parts.length !== 3) return null;
  const [port, label, appId] = parts as [string, string, string];
  if (!/^\d{1,5}$/.test(port) || !label || !appId) return null;
  return { port: Number(port), label, appId };
}
