export function parseCookies(header: string | null): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!name || name in out) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

export interface CookieOptions {
  httpOnly?: boolean;
  secure: boolean;
  maxAge?: number;
  sameSite?: 'Lax' | 'Strict';
  path?: string;
}

export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  let s = `${name}=${encodeURIComponent(value)}; Path=${o.path ?? '/'}; SameSite=${o.sameSite ?? 'Lax'}`;
  if (o.maxAge !== undefined) s += `; Max-Age=${Math.max(0, Math.floor(o.maxAge))}`;
  if (o.httpOnly) s += '; HttpOnly';
  if (o.secure) s += '; Secure';
  return s;
}

export function clearCookie(name: string, secure: boolean, httpOnly = true): string {
  return serializeCookie(name, '', { secure, httpOnly, maxAge: 0 });
}
