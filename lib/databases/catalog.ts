// The engines catalog: pinned official images per version, and how each is configured, probed,
// dumped and checked. SVC_IMAGE_MAP swaps a catalog reference for another (a mirror; local
// images in tests) without the catalog knowing.
import type { Config } from '../config.js';

export const DB_ENGINES = ['postgres', 'mariadb', 'redis'] as const;
export type DbEngine = (typeof DB_ENGINES)[number];

export interface EngineSpec {
  engine: DbEngine;
  versions: string[];
  default_version: string;
  images: Record<string, string>;
  port: number;
  dataPath: string;
  defaultEnvVar: string;
}

export const CATALOG: Record<DbEngine, EngineSpec> = {
  postgres: {
    engine: 'postgres',
    versions: ['16', '15'],
    default_version: '16',
    images: { '16': 'postgres:16.4-bookworm', '15': 'postgres:15.8-bookworm' },
    port: 5432,
    dataPath: '/var/lib/postgresql/data',
    defaultEnvVar: 'DATABASE_URL',
  },
  mariadb: {
    engine: 'mariadb',
    versions: ['11.4', '10.11'],
    default_version: '11.4',
    images: { '11.4': 'mariadb:11.4.3-noble', '10.11': 'mariadb:10.11.9-jammy' },
    port: 3306,
    dataPath: '/var/lib/mysql',
    defaultEnvVar: 'DATABASE_URL',
  },
  redis: {
    engine: 'redis',
    versions: ['7.2', '7'],
    default_version: '7.2',
    images: { '7.2': 'redis:7.2.5-bookworm', '7': 'redis:7.0.15-bookworm' },
    port: 6379,
    dataPath: '/data',
    defaultEnvVar: 'REDIS_URL',
  },
};

export function listEngines(): Array<Pick<EngineSpec, 'engine' | 'versions' | 'default_version' | 'images'>> {
  return DB_ENGINES.map((e) => {
    const s = CATALOG[e];
    return { engine: s.engine, versions: s.versions, default_version: s.default_version, images: s.images };
  });
}

/** The reference actually run: the catalog's, unless SVC_IMAGE_MAP maps it elsewhere. */
export function mappedImage(config: Pick<Config, 'imageMap'>, ref: string): string {
  return config.imageMap[ref] ?? ref;
}
