// Repository URLs and refs, per the contract. Checked before anything reaches the git CLI,
// which also gets `--` and `protocol.*` guards: two layers, because git's own option parsing
// and transport helpers (ext::, file://) are the classic injection routes.

export type Verdict = { ok: true } | { ok: false; reason: string };

const SHELL_META = /[$`;|&<>()\\'"!*?{}]/;
const CONTROL = /[\u0000-\u001f\u007f]/;
const USER = /^[A-Za-z0-9._~][A-Za-z0-9._~-]*$/;
const HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])$/;
const CREDENTIALS =
  "credentials in the URL are refused (they would be stored and shown in clear); use ssh with the app's deploy key";

function decoded(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

// The userinfo of a scheme URL that may hold a secret: all of it for http(s)/git (a token often
// stands alone as the user name), the password part for ssh (its user name is no secret).
function redactInfo(all: string, scheme: string, info: string): string {
  if (scheme.toLowerCase() !== 'ssh') return `${scheme}://***@`;
  const colon = info.indexOf(':');
  return colon < 0 ? all : `${scheme}://${info.slice(0, colon)}:***@`;
}

/**
 * The URL with a possible secret in its userinfo replaced by "***": for repositories stored
 * before credentials were refused (views, exports, log lines, messages).
 */
export function redactUrl(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#@]*)@/, redactInfo);
}

/** The same for every scheme URL in a text (git's own messages quote the URL). */
export function redactUrls(text: string): string {
  return text.replace(/\b([A-Za-z][A-Za-z0-9+.-]*):\/\/([^\s/?#@'"]*)@/g, redactInfo);
}

export function checkRepoUrl(url: string): Verdict {
  if (typeof url !== 'string' || url.length === 0) return { ok: false, reason: 'repository URL is empty' };
  if (url.length > 2048) return { ok: false, reason: 'repository URL is too long' };
  if (CONTROL.test(url)) return { ok: false, reason: 'repository URL contains control characters' };
  if (/\s/.test(url)) return { ok: false, reason: 'repository URL contains whitespace' };
  if (url.startsWith('-')) return { ok: false, reason: 'repository URL starts with "-"' };
  // Before the character checks, so that a redacted URL (`https://***@host/...`) says why it is refused.
  const info = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)@/.exec(url);
  if (info && (info[1]!.toLowerCase() !== 'ssh' || info[2]!.includes(':')))
    return { ok: false, reason: CREDENTIALS };
  if (SHELL_META.test(url)) return { ok: false, reason: 'repository URL contains shell metacharacters' };
  if (/::/.test(url.split('/')[0] ?? '') && !/^[a-z+]+:\/\//i.test(url))
    return { ok: false, reason: 'transport helpers ("<helper>::") are refused' };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme) {
    const s = scheme[1].toLowerCase();
    if (!['https', 'http', 'ssh', 'git'].includes(s))
      return { ok: false, reason: `transport "${s}" is refused (use https, http, ssh or git)` };
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, reason: 'repository URL is not a valid URL' };
    }
    // A token or password in the URL would be stored, logged and exported with it. ssh:// may
    // name a user (it carries no secret); the deploy key is the way to authenticate.
    if (parsed.password || (s !== 'ssh' && parsed.username)) return { ok: false, reason: CREDENTIALS };
    const user = decoded(parsed.username);
    if (user === null || (user && !USER.test(user)))
      return { ok: false, reason: 'repository user may only contain letters, digits, ".", "_", "~" and "-"' };
    if (!parsed.hostname) return { ok: false, reason: 'repository URL has no host' };
    // WHATWG keeps the host of ssh:// and git:// URLs percent-encoded while git decodes it: check
    // what git will see, and accept only plain host names and IP literals.
    const host = decoded(parsed.hostname);
    if (host === null || host !== parsed.hostname)
      return { ok: false, reason: 'repository host may not be percent-encoded' };
    if (host.startsWith('-')) return { ok: false, reason: 'repository host starts with "-"' };
    if (!HOST.test(host)) return { ok: false, reason: 'repository host is not a host name or IP address' };
    if (parsed.pathname === '/' || parsed.pathname === '')
      return { ok: false, reason: 'repository URL has no path' };
    return { ok: true };
  }
  // scp-like: [user@]host:path, no scheme. Git treats it as ssh only when a colon comes before any slash.
  const scp = /^(?:([A-Za-z0-9._~-]+)@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(.+)$/.exec(url);
  if (scp) {
    const [, user, host, path] = scp;
    if (host.startsWith('-') || host.startsWith('.'))
      return { ok: false, reason: 'repository host is invalid' };
    if (path.startsWith('-')) return { ok: false, reason: 'repository path starts with "-"' };
    // Without this, "name:secret@host:path" would pass as host "name" with a path holding the secret.
    if (!user) return { ok: false, reason: 'scp-like URLs need a user (user@host:path)' };
    return { ok: true };
  }
  return {
    ok: false,
    reason:
      'repository URL must be https://, http://, ssh://, git:// or user@host:path (local paths and file:// are refused)',
  };
}

const REF = /^[A-Za-z0-9._/-]{1,255}$/;

/** A commit named by its hash, full or abbreviated: nothing else (no revision syntax, no option). */
export const COMMIT_HASH = /^[0-9a-fA-F]{4,40}$/;

export function checkCommit(commit: string): Verdict {
  if (typeof commit !== 'string' || !COMMIT_HASH.test(commit))
    return { ok: false, reason: 'a commit is 4 to 40 hexadecimal digits of its hash' };
  return { ok: true };
}

export function checkRef(ref: string): Verdict {
  if (typeof ref !== 'string' || ref.length === 0) return { ok: false, reason: 'ref is empty' };
  if (!REF.test(ref))
    return { ok: false, reason: 'ref may only contain letters, digits, ".", "_", "/" and "-" (at most 255)' };
  if (ref.startsWith('-')) return { ok: false, reason: 'ref starts with "-"' };
  if (ref.startsWith('/')) return { ok: false, reason: 'ref starts with "/"' };
  if (ref.includes('..')) return { ok: false, reason: 'ref contains ".."' };
  // git's own ref rules, so a valid-looking ref does not fail later with a confusing message.
  if (
    ref.endsWith('/') ||
    ref.endsWith('.') ||
    ref.endsWith('.lock') ||
    ref.includes('//') ||
    ref.split('/').some((p) => p.startsWith('.'))
  ) {
    return { ok: false, reason: 'ref is not a valid git ref name' };
  }
  return { ok: true };
}
