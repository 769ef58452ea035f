// The preview resource and its settings as the API shows them.
import type { PreviewTable } from '../db/schema.js';
import type { AppStatus } from '../apps/model.js';

export const PREVIEW_DATABASES = ['none', 'empty', 'latest_backup'] as const;
export type PreviewDatabase = (typeof PREVIEW_DATABASES)[number];

export interface PreviewSettings {
  enabled: boolean;
  from_forks: boolean;
  ttl_hours: number;
  max: number;
  inherit_env: string[];
  database: PreviewDatabase;
  /** Applied to each preview's own app row: the Sleeper stops idle previews, a request wakes them. */
  sleep_after_minutes: number | null;
}

/** Minutes without a request after which a preview sleeps unless its settings say otherwise. */
export const DEFAULT_PREVIEW_SLEEP_MINUTES = 30;

/** Safe by default: off, forks refused, no variable of the app handed over; idle previews sleep. */
export const DEFAULT_SETTINGS: PreviewSettings = {
  enabled: false,
  from_forks: false,
  ttl_hours: 72,
  max: 5,
  inherit_env: [],
  database: 'none',
  sleep_after_minutes: DEFAULT_PREVIEW_SLEEP_MINUTES,
};

/** Numbers the API hands out when none is given: above any plausible pull request number of a small forge. */
export const FIRST_API_NUMBER = 1000;
export const MAX_NUMBER = 999_999_999;

export interface Preview {
  id: string;
  app_id: string;
  number: number;
  title: string | null;
  branch: string;
  commit: string | null;
  host: string | null;
  url: string | null;
  status: AppStatus | 'removing';
  deployment_id: string | null;
  sleeping: boolean;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

/** The host label of preview `number` of app `appName`: `pr-<number>-<app>`. */
export function previewLabel(appName: string, number: number): string {
  return `pr-${number}-${appName}`;
}

/** The engine name of the preview's own app row: its containers, network and volumes carry it. */
export function previewAppName(appName: string, number: number): string {
  return `${appName}-pr-${number}`;
}

export function toPreview(
  row: PreviewTable,
  status: string,
  baseDomain: string | null,
  appName: string,
): Preview {
  const host = baseDomain ? `${previewLabel(appName, row.number)}.${baseDomain}` : null;
  return {
    id: row.id,
    app_id: row.app_id,
    number: row.number,
    title: row.title,
    branch: row.branch,
    commit: row.commit_sha,
    host,
    url: host ? `https://${host}` : null,
    status: status as Preview['status'],
    deployment_id: row.deployment_id,
    sleeping: status === 'sleeping',
    created_at: row.created_at,
    updated_at: row.updated_at,
    expires_at: row.expires_at,
  };
}
