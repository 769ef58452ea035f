// Serves the built dashboard (dist/dashboard). Every file is read once at boot into a map keyed
// by its URL path, so a request can only ever name a file that was there at boot: no path from
// the request reaches the filesystem, and `..`, encoded slashes or symlinks have nothing to walk.
import { readdirSync, readFileSync, lstatSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { Response } from '@whatwg-node/fetch';

export interface DashboardFile {
  body: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer> | null;
  type: string;
  etag: string;
  immutable: boolean;
}

export interface Dashboard {
  /** A response for a GET/HEAD the API did not claim, or null (the caller answers 404 JSON). */
  serve(
    method: string,
    path: string,
    acceptEncoding: string | null,
    ifNoneMatch: string | null,
  ): Response | null;
}

export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../dashboard/', import.meta.url));

// The dashboard loads only its own files and talks only to its own origin; nothing may frame it.
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  ico: 'image/x-icon',
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  woff2: 'font/woff2',
  webmanifest: 'application/manifest+json',
};
const COMPRESSIBLE = new Set(['html', 'js', 'css', 'svg', 'json', 'txt', 'webmanifest']);
const MAX_FILES = 2000;

/** Paths the dashboard never answers, whatever is in its folder: the API's own namespaces. */
export function isReservedPath(path: string): boolean {
  return /^\/(api|webhooks|hooks|metrics)(\/|$)/i.test(path);
}

/**
 * The built client in `dir`, or null without one. Only the names are read at start-up: a file is
 * read (and compressed) by its first request, so a server nobody opens the dashboard of, polled on
 * its health check, holds none of it.
 */
export function loadDashboard(dir: string = DEFAULT_DASHBOARD_DIR): Dashboard | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const files = new Map<string, () => DashboardFile | null>();
  const visit = (abs: string, url: string) => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      const full = join(abs, e.name);
      const st = lstatSync(full);
      if (st.isDirectory()) visit(full, `${url}${e.name}/`);
      else if (st.isFile()) {
        if (files.size >= MAX_FILES) throw new Error(`dashboard: more than ${MAX_FILES} files in ${dir}`);
        files.set(
          url + e.name,
          once(() => readDashboardFile(full, e.name, url === '/assets/')),
        );
      }
    }
  };
  visit(dir, '/');
  return { serve: server(files, files.get('/index.html')!) };
}

function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

/** The file, or null when it is gone since start-up (an upgrade replaced the build): answered as missing. */
function readDashboardFile(full: string, name: string, immutable: boolean): DashboardFile | null {
  const ext = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
  let body: Uint8Array<ArrayBuffer>;
  try {
    body = new Uint8Array(readFileSync(full));
  } catch {
    return null;
  }
  const gz = COMPRESSIBLE.has(ext) && body.length > 512 ? new Uint8Array(gzipSync(body, { level: 9 })) : null;
  return {
    body,
    gzip: gz && gz.length < body.length ? gz : null,
    type: TYPES[ext] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    immutable,
  };
}

function respond(
  f: DashboardFile,
  method: string,
  acceptEncoding: string | null,
  ifNoneMatch: string | null,
  html: boolean,
): Response {
  const headers: Record<string, string> = {
    'content-type': f.type,
    'x-content-type-options': 'nosniff',
    'cache-control': f.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    etag: f.etag,
    vary: 'Accept-Encoding',
  };
  if (html) {
    headers['content-security-policy'] = DASHBOARD_CSP;
    headers['x-frame-options'] = 'DENY';
    headers['referrer-policy'] = 'no-referrer';
    headers['cross-origin-opener-policy'] = 'same-origin';
  }
  if (ifNoneMatch !== null && ifNoneMatch.split(',').some((t) => t.trim() === f.etag))
    return new Response(null, { status: 304, headers });
  const gzip = f.gzip !== null && acceptEncoding !== null && /\bgzip\b/i.test(acceptEncoding);
  if (gzip) headers['content-encoding'] = 'gzip';
  const body = gzip ? f.gzip! : f.body;
  headers['content-length'] = String(body.length);
  return new Response(method === 'HEAD' ? null : body, { status: 200, headers });
}

type Loader = () => DashboardFile | null;

function server(files: Map<string, Loader>, index: Loader): Dashboard['serve'] {
  return (method, path, acceptEncoding, ifNoneMatch) => {
    if (method !== 'GET' && method !== 'HEAD') return null;
    if (isReservedPath(path)) return null;
    const load = path === '/' ? index : files.get(path);
    if (load) {
      const file = load();
      if (file === null) return null;
      const html = load === index || file.type.startsWith('text/html');
      return respond(file, method, acceptEncoding, ifNoneMatch, html);
    }
    // A missing asset is a 404, not the page: a stale hashed name must not load HTML as script.
    if (path.startsWith('/assets/')) return null;
    // Client-side routes (`/apps/<id>`, `/tokens`) get the page; names with an extension do not.
    const last = path.slice(path.lastIndexOf('/') + 1);
    if (last.includes('.')) return null;
    const page = index();
    return page === null ? null : respond(page, method, acceptEncoding, ifNoneMatch, true);
  };
}
