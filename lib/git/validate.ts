// Repository URLs and refs, per the contract. Checked before anything reaches the git CLI,
// which also gets `--` and `protocol.*` guards: two layers, because git's own option parsing
// and transport helpers (ext::, file://) are the classic injection routes.

export type Verdict = { ok: true } | { ok: false; reason: string };

const SHELL_META = /[$`;|&<>()\\'"!*?{}]/;
const CONTROL = /[\u0000-\u001f\u007f]/;

export function checkRepoUrl(url: string): Verdict {
  if (typeof url !== 'string' || url.length === 0) return { ok: false, reason: 'repository URL is empty' };
  if (url.length > 2048) return { ok: false, reason: 'repository URL is too long' };
  if (CONTROL.test(url)) return { ok: false, reason: 'repository URL contains control characters' };
  if (/\s/.test(url)) return { ok: false, reason: 'repository URL contains whitespace' };
  if (url.startsWith('-')) return { ok: false, reason: 'repository URL starts with "-"' };
  if (SHELL_META.test(url)) return { ok: false, reason: 'repository URL contains shell metacharacters' };
  if (/::/.test(url.split('/')[0] ?? '') && !/^[a-z+]+:\/\//i.test(url)) return { ok: false, reason: 'transport helpers ("<helper>::") are refused' };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme) {
    const s = scheme[1].toLowerCase();
    if (!['https', 'http', 'ssh', 'git'].includes(s)) return { ok: false, reason: `transport "${s}" is refused (use https, http, ssh or git)` };
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, reason: 'repository URL is not a valid URL' };
    }
    if (!parsed.hostname) return { ok: false, reason: 'repository URL has no host' };
    if (parsed.hostname.startsWith('-')) return { ok: false, reason: 'repository host starts with "-"' };
    if (parsed.pathname === '/' || parsed.pathname === '') return { ok: false, reason: 'repository URL has no path' };
    return { ok: true };
  }
  // scp-like: [user@]host:path, no scheme. Git treats it as ssh only when a colon comes before any slash.
  const scp = /^(?:([A-Za-z0-9._~-]+)@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(.+)$/.exec(url);
  if (scp) {
    const [, , host, path] = scp;
    if (host.startsWith('-') || host.startsWith('.')) return { ok: false, reason: 'repository host is invalid' };
    if (path.startsWith('-')) return { ok: false, reason: 'repository path starts with "-"' };
    if (!url.includes('@')) return { ok: false, reason: 'scp-like URLs need a user (user@host:path)' };
    return { ok: true };
  }
  return { ok: false, reason: 'repository URL must be https://, http://, ssh://, git:// or user@host:path (local paths and file:// are refused)' };
}

const REF = /^[A-Za-z0-9._/-]{1,255}$/;

export function checkRef(ref: string): Verdict {
  if (typeof ref !== 'string' || ref.length === 0) return { ok: false, reason: 'ref is empty' };
  if (!REF.test(ref)) return { ok: false, reason: 'ref may only contain letters, digits, ".", "_", "/" and "-" (at most 255)' };
  if (ref.startsWith('-')) return { ok: false, reason: 'ref starts with "-"' };
  if (ref.startsWith('/')) return { ok: false, reason: 'ref starts with "/"' };
  if (ref.includes('..')) return { ok: false, reason: 'ref contains ".."' };
  // git's own ref rules, so a valid-looking ref does not fail later with a confusing message.
  if (ref.endsWith('/') || ref.endsWith('.') || ref.endsWith('.lock') || ref.includes('//') || ref.split('/').some((p) => p.startsWith('.'))) {
    return { ok: false, reason: 'ref is not a valid git ref name' };
  }
  return { ok: true };
}
