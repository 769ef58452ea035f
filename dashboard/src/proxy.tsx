// Where an app answers and whether the proxy lets it: its URLs as links with their HTTPS state, and
// a warning wherever the proxy's absence would otherwise hide behind a successful deploy.
import type { components } from '../../client/types';

export type AppUrl = components['schemas']['AppUrl'];
export type ProxyHealth = components['schemas']['ProxyHealth'];

const PROXY_TITLE: Record<ProxyHealth['state'], string> = {
  ok: 'The proxy serves the apps.',
  starting: 'The proxy is being brought up to date.',
  off: 'No proxy.',
  unreachable: 'Caddy is not running.',
  out_of_sync: 'Caddy is behind.',
};

/** Nothing while the proxy serves (or is being brought up to date); else what is wrong and what to do. */
export function ProxyNotice({ proxy }: { proxy: ProxyHealth | null | undefined }) {
  if (!proxy || proxy.state === 'ok' || proxy.state === 'starting') return null;
  return (
    <div class="notice notice-warn" role="status" data-testid="proxy-notice">
      <strong>{PROXY_TITLE[proxy.state]}</strong> {proxy.detail}
    </div>
  );
}

function httpsState(u: AppUrl): string {
  if (u.https) return 'HTTPS';
  if (u.status === 'issuing') return 'HTTP, certificate coming';
  if (u.status === 'awaiting_dns') return 'HTTP, DNS not pointing here yet';
  if (u.status === 'error') return 'HTTP, certificate failed';
  return 'HTTP';
}

/** An app's URLs as links (the first only when `first`), each with its HTTPS state. */
export function AppUrls({ urls, first = false }: { urls: readonly AppUrl[]; first?: boolean }) {
  if (!urls.length) return <span class="muted">no URL</span>;
  const shown = first ? urls.slice(0, 1) : urls;
  return (
    <span class="urls" data-testid="app-urls">
      {shown.map((u) => (
        <span key={u.url} class="url">
          <a href={u.url} target="_blank" rel="noopener noreferrer" data-testid="app-url">
            {u.hostname}
          </a>{' '}
          <span class={`small ${u.https ? 'ok' : 'muted'}`}>{httpsState(u)}</span>
        </span>
      ))}
      {first && urls.length > 1 && <span class="muted small"> +{urls.length - 1}</span>}
    </span>
  );
}

/**
 * Why an app has no URL, and what gives it one: a first deployment (its services are known then),
 * a port for a service that has none (an image's EXPOSE is not read), else a base domain or a domain.
 */
export function NoUrlHint({
  services,
}: {
  services: ReadonlyArray<{ name: string; port: number | null }> | null;
}) {
  const portless = services?.find((s) => s.port === null)?.name;
  const text =
    services?.length === 0
      ? 'No URL yet: deploy it; then its service needs a port (or add a domain).'
      : portless
        ? `No URL yet: service "${portless}" has no port. Set the port it listens on under Services (Port and health path), and its URL appears.`
        : 'No URL yet: set a base domain on the Instance page (every app then gets one), or add a domain under Domains.';
  return (
    <span class="muted small" data-testid="no-url">
      {text}
    </span>
  );
}
