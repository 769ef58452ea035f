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
  files: Map<string, DashboardFile>;
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

export function loadDashboard(dir: string = DEFAULT_DASHBOARD_DIR): Dashboard | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const files = new Map<string, DashboardFile>();
  const visit = (abs: string, url: string) => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      const full = join(abs, e.name);
      // Only regular files and real folders of the build output; a symlink is never followed.
      const st = lstatSync(full);
      if (st.isDirectory()) visit(full, `${url}${e.name}/`);
      else if (st.isFile()) {
        if (files.size >= MAX_FILES) throw new Error(`dashboard: more than ${MAX_FILES} files in ${dir}`);
        const ext = e.name.slice(e.name.lastIndexOf('.') + 1).toLowerCase();
        const body = new Uint8Array(readFileSync(full));
        const gz =
          COMPRESSIBLE.has(ext) && body.length > 512 ? new Uint8Array(gzipSync(body, { level: 9 })) : null;
        files.set(url + e.name, {
          body,
          gzip: gz && gz.length < body.length ? gz : null,
          type: TYPES[ext] ?? 'application/octet-stream',
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
          // Vite names what it emits under assets/ by content hash: such a name never changes meaning.
          immutable: url === '/assets/',
        });
      }
    }
  };
  visit(dir, '/');
  const index = files.get('/index.html')!;

  const respond = (
    f: DashboardFile,
    method: string,
    acceptEncoding: string | null,
    ifNoneMatch: string | null,
    html: boolean,
  ): Response => {
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
  };

  return {
    files,
    serve(method, path, acceptEncoding, ifNoneMatch) {
      if (method !== 'GET' && method !== 'HEAD') return null;
      if (isReservedPath(path)) return null;
      const file = path === '/' ? index : files.get(path);
      if (file)
        return respond(
          file,
          method,
          acceptEncoding,
          ifNoneMatch,
          file === index || file.type.startsWith('text/html'),
        );
      // A missing asset is a 404, not the page: a stale hashed name must not load HTML as script.
      if (path.startsWith('/assets/')) return null;
      // Client-side routes (`/apps/<id>`, `/tokens`) get the page; names with an extension do not.
      const last = path.slice(path.lastIndexOf('/') + 1);
      if (last.includes('.')) return null;
      return respond(index, method, acceptEncoding, ifNoneMatch, true);
    },
  };
}
