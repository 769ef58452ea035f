// Vetted add-on templates: ordinary compose files (the same policy as any app's, no exemption),
// each image pinned to a version, parameters given as `${KEY}` and supplied as the app's env.
// Generated parameters are random secrets, shown once at install.
import { randomBytes } from 'node:crypto';
import { badRequest, notFound } from '../http/errors.js';

export interface AddonParam {
  key: string;
  label: string;
  default: string | null;
  secret: boolean;
  generated: boolean;
}

export interface Addon {
  id: string;
  name: string;
  description: string;
  category: string;
  services: string[];
  images: string[];
  footprint_mb: number;
  params: AddonParam[];
  compose: string;
}

const gen = (key: string, label: string): AddonParam => ({
  key,
  label,
  default: null,
  secret: true,
  generated: true,
});
const opt = (key: string, label: string, def: string): AddonParam => ({
  key,
  label,
  default: def,
  secret: false,
  generated: false,
});

const ADDONS: Addon[] = [
  {
    id: 'uptime-kuma',
    name: 'Uptime Kuma',
    description: 'Self-hosted uptime monitoring with status pages.',
    category: 'monitoring',
    services: ['web'],
    images: ['louislam/uptime-kuma:1.23.16'],
    footprint_mb: 150,
    params: [],
    compose: `services:
  web:
    image: louislam/uptime-kuma:1.23.16
    restart: unless-stopped
    volumes:
      - data:/app/data
volumes:
  data: {}
`,
  },
  {
    id: 'umami',
    name: 'Umami',
    description: 'Privacy-friendly web analytics, with its PostgreSQL.',
    category: 'analytics',
    services: ['web', 'db'],
    images: ['ghcr.io/umami-software/umami:postgresql-v2.13.2', 'postgres:16.4-bookworm'],
    footprint_mb: 400,
    params: [gen('DB_PASSWORD', 'Database password'), gen('APP_SECRET', 'Session secret')],
    compose: `services:
  web:
    image: ghcr.io/umami-software/umami:postgresql-v2.13.2
    restart: unless-stopped
    environment:
      DATABASE_URL: postgresql://umami:\${DB_PASSWORD}@db:5432/umami
      DATABASE_TYPE: postgresql
      APP_SECRET: \${APP_SECRET}
    depends_on:
      db:
        condition: service_healthy
  db:
    image: postgres:16.4-bookworm
    restart: unless-stopped
    environment:
      POSTGRES_DB: umami
      POSTGRES_USER: umami
      POSTGRES_PASSWORD: \${DB_PASSWORD}
    volumes:
      - db:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD", "pg_isready", "-h", "127.0.0.1", "-U", "umami", "-d", "umami"]
      interval: 5s
      retries: 30
volumes:
  db: {}
`,
  },
  {
    id: 'gitea',
    name: 'Gitea',
    description: 'A lightweight self-hosted git forge.',
    category: 'development',
    services: ['web'],
    images: ['gitea/gitea:1.22.3'],
    footprint_mb: 200,
    params: [opt('APP_NAME', 'Site title', 'Gitea')],
    compose: `services:
  web:
    image: gitea/gitea:1.22.3
    restart: unless-stopped
    environment:
      GITEA__DEFAULT__APP_NAME: \${APP_NAME}
      GITEA__server__DISABLE_SSH: "true"
    volumes:
      - data:/data
volumes:
  data: {}
`,
  },
  {
    id: 'n8n',
    name: 'n8n',
    description: 'Workflow automation.',
    category: 'automation',
    services: ['web'],
    images: ['n8nio/n8n:1.64.3'],
    footprint_mb: 350,
    params: [
      gen('N8N_ENCRYPTION_KEY', 'Credentials encryption key'),
      opt('GENERIC_TIMEZONE', 'Time zone', 'UTC'),
    ],
    compose: `services:
  web:
    image: n8nio/n8n:1.64.3
    restart: unless-stopped
    environment:
      N8N_ENCRYPTION_KEY: \${N8N_ENCRYPTION_KEY}
      GENERIC_TIMEZONE: \${GENERIC_TIMEZONE}
    volumes:
      - data:/home/node/.n8n
volumes:
  data: {}
`,
  },
  {
    id: 'vaultwarden',
    name: 'Vaultwarden',
    description: 'Bitwarden-compatible password manager server.',
    category: 'security',
    services: ['web'],
    images: ['vaultwarden/server:1.32.3'],
    footprint_mb: 60,
    params: [gen('ADMIN_TOKEN', 'Admin page token'), opt('SIGNUPS_ALLOWED', 'Allow sign-ups', 'false')],
    compose: `services:
  web:
    image: vaultwarden/server:1.32.3
    restart: unless-stopped
    environment:
      ADMIN_TOKEN: \${ADMIN_TOKEN}
      SIGNUPS_ALLOWED: \${SIGNUPS_ALLOWED}
    volumes:
      - data:/data
volumes:
  data: {}
`,
  },
  {
    id: 'metabase',
    name: 'Metabase',
    description: 'Business intelligence and dashboards.',
    category: 'analytics',
    services: ['web'],
    images: ['metabase/metabase:v0.50.30'],
    footprint_mb: 900,
    params: [],
    compose: `services:
  web:
    image: metabase/metabase:v0.50.30
    restart: unless-stopped
    environment:
      MB_DB_FILE: /metabase-data/metabase.db
    volumes:
      - data:/metabase-data
volumes:
  data: {}
`,
  },
  {
    id: 'minio',
    name: 'MinIO',
    description: 'S3-compatible object storage.',
    category: 'storage',
    services: ['web'],
    images: ['minio/minio:RELEASE.2024-10-13T13-34-11Z'],
    footprint_mb: 250,
    params: [opt('MINIO_ROOT_USER', 'Root user', 'admin'), gen('MINIO_ROOT_PASSWORD', 'Root password')],
    compose: `services:
  web:
    image: minio/minio:RELEASE.2024-10-13T13-34-11Z
    restart: unless-stopped
    command: ["server", "/data", "--console-address", ":9001"]
    environment:
      MINIO_ROOT_USER: \${MINIO_ROOT_USER}
      MINIO_ROOT_PASSWORD: \${MINIO_ROOT_PASSWORD}
    volumes:
      - data:/data
volumes:
  data: {}
`,
  },
  {
    id: 'ntfy',
    name: 'ntfy',
    description: 'Push notifications over HTTP.',
    category: 'notifications',
    services: ['web'],
    images: ['binwiederhier/ntfy:v2.11.0'],
    footprint_mb: 40,
    params: [opt('NTFY_BASE_URL', 'Public URL', 'http://localhost')],
    compose: `services:
  web:
    image: binwiederhier/ntfy:v2.11.0
    restart: unless-stopped
    command: ["serve"]
    environment:
      NTFY_BASE_URL: \${NTFY_BASE_URL}
      NTFY_CACHE_FILE: /var/cache/ntfy/cache.db
    volumes:
      - cache:/var/cache/ntfy
volumes:
  cache: {}
`,
  },
];

export type AddonView = Omit<Addon, 'compose'>;

export function listAddons(): AddonView[] {
  return ADDONS.map(({ compose: _c, ...rest }) => rest);
}

export function getAddon(id: string): Addon {
  const a = ADDONS.find((x) => x.id === id);
  if (!a) throw notFound('No such add-on');
  return a;
}

/** The env an install would give the app: defaults, operator values, fresh secrets for the rest. */
export function resolveParams(
  addon: Addon,
  input: Record<string, string> = {},
): { env: Record<string, string>; generated: Record<string, string> } {
  const known = new Set(addon.params.map((p) => p.key));
  for (const k of Object.keys(input))
    if (!known.has(k))
      throw badRequest(`Unknown parameter "${k.slice(0, 60)}" for ${addon.name}`, [
        { field: `params.${k.slice(0, 60)}`, message: 'unknown' },
      ]);
  const env: Record<string, string> = {};
  const generated: Record<string, string> = {};
  for (const p of addon.params) {
    const given = input[p.key];
    if (given !== undefined) env[p.key] = given;
    else if (p.generated) env[p.key] = generated[p.key] = randomBytes(24).toString('base64url');
    else env[p.key] = p.default ?? '';
  }
  return { env, generated };
}
