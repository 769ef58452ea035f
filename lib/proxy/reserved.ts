// Automatic and preview hosts are reserved for their app (docs/operating.md, "Reserved hosts"): under
// the base domain, `<app>`, `<anything>.<app>` and `pr-<n>-<app>` (with anything before it) belong
// to the app named `<app>`, whoever asks and whether or not the host is served yet. A custom domain
// there would take another app's visitors, cookies and sign-ins; on its own app it may name a host
// of that namespace the app does not serve automatically, never one it does.
// Pure functions of rows; lib/proxy/domains.ts reads the rows and turns an answer into a 409.
import { automaticHosts, type AppRow } from './config.js';

export interface Reservation {
  /** The app whose namespace holds the hostname. */
  appId: string;
  appName: string;
  /** Why, in one sentence, for the 409. */
  message: string;
}

const PREVIEW_LABEL = /^pr-\d+-(.+)$/;

/** Apps that name a namespace: not previews (they live in their app's namespace). */
const owners = (apps: readonly AppRow[]) => apps.filter((a) => a.label === undefined);

/** The app whose namespace under `base` holds `hostname` (already lower-cased, no trailing dot). */
export function namespaceOwner(
  hostname: string,
  base: string | null,
  apps: readonly Pick<AppRow, 'id' | 'name' | 'label'>[],
): { id: string; name: string } | null {
  if (!base || !hostname.endsWith(`.${base}`)) return null;
  const labels = hostname.slice(0, -(base.length + 1)).split('.');
  const last = labels[labels.length - 1]!;
  const name = PREVIEW_LABEL.exec(last)?.[1];
  const candidates = owners(apps as AppRow[]);
  return (
    candidates.find((a) => a.name === last) ??
    (name !== undefined ? candidates.find((a) => a.name === name) : undefined) ??
    null
  );
}

function described(hostname: string, base: string, owner: { id: string; name: string }): Reservation {
  const n = owner.name;
  return {
    appId: owner.id,
    appName: n,
    message:
      `${hostname} is reserved for app "${n}": ${n}.${base}, <anything>.${n}.${base} and ` +
      `pr-<n>-${n}.${base} are its automatic and preview hosts`,
  };
}

/**
 * Why `hostname` may not be a custom domain of `appId` (null: no app, a redirect), or null when
 * it may: it is some app's automatic host, or lies in another app's namespace.
 */
export function reservationOf(
  hostname: string,
  appId: string | null,
  base: string | null,
  apps: readonly AppRow[],
): Reservation | null {
  if (!base) return null;
  const auto = automaticHosts(base, apps).find((a) => a.hostname === hostname);
  const owner = namespaceOwner(hostname, base, apps);
  if (auto) {
    const app = apps.find((a) => a.id === auto.appId)!;
    const named = owner ?? { id: app.id, name: app.name };
    return described(hostname, base, named);
  }
  if (owner && owner.id !== appId) return described(hostname, base, owner);
  return null;
}

/** The custom domains an app named `name` would find in its namespace (an app created later). */
export function domainsInNamespace(
  name: string,
  base: string | null,
  domains: readonly { hostname: string }[],
): string[] {
  const probe = [{ id: '\u0000new', name, services: [] }];
  return domains.filter((d) => namespaceOwner(d.hostname, base, probe) !== null).map((d) => d.hostname);
}

/** The domains a base domain of `base` would put in some app's reserved hosts, with the reason. */
export function collisionsUnder(
  base: string | null,
  apps: readonly AppRow[],
  domains: readonly { hostname: string; app_id: string | null }[],
): Reservation[] {
  const out: Reservation[] = [];
  for (const d of domains) {
    const r = reservationOf(d.hostname, d.app_id, base, apps);
    if (r) out.push(r);
  }
  return out;
}
