// The dashboard shell: finds out whether setup is open or a session exists, then routes.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import * as api from './api';
import type { User } from './api';
import { Link, navigate, usePath } from './router';
import { StepUpDialog } from './stepup';
import { AccessProvider, NO_ACCESS, accessFrom, allowed, type Access } from './access';
import { startSocket, stopSocket, useSocketState } from './ws';
import { ErrorNote, useLoad } from './ui';
import { SetupPage } from './pages/setup';
import { LoginPage } from './pages/login';
import { OverviewPage } from './pages/overview';
import { AppPage } from './pages/app';
import { TokensPage } from './pages/tokens';
import { AuditPage } from './pages/audit';
import { prefetchOverview, overviewReady } from './pages/overview';
import './styles.css';

// Before the first render: the session check and, on the overview, its data, all at once.
const bootCheck = Promise.all([api.setupStatus(), api.me().catch((e: unknown) => e)]);
bootCheck.catch(() => {});
if (location.pathname === '/') prefetchOverview();

/** A page loaded when first opened, so the first page's script stays small. */
function lazyPage<P extends object>(load: () => Promise<(p: P) => unknown>) {
  let Comp: any = null;
  let pending: Promise<unknown> | null = null;
  return function LazyPage(props: P) {
    const [, setLoaded] = useState(false);
    const [error, setError] = useState<unknown>(null);
    useEffect(() => {
      if (Comp) return;
      pending ??= load().then((c) => (Comp = c));
      pending.then(
        () => setLoaded(true),
        (e) => {
          pending = null;
          setError(e);
        },
      );
    }, []);
    if (Comp) return <Comp {...props} />;
    return <main>{error ? <ErrorNote error={error} /> : <p class="muted">Loading…</p>}</main>;
  };
}
const SecurityPage = lazyPage<object>(() => import('./pages/security').then((m) => m.SecurityPage));
const DomainsPage = lazyPage<object>(() => import('./pages/domains').then((m) => m.DomainsPage));
const NotificationsPage = lazyPage<object>(() =>
  import('./pages/notifications').then((m) => m.NotificationsPage),
);
const InstancePage = lazyPage<object>(() => import('./pages/instance').then((m) => m.InstancePage));
const ProfilePage = lazyPage<{ user: User }>(() => import('./pages/profile').then((m) => m.ProfilePage));
const OperatorsPage = lazyPage<object>(() => import('./pages/operators').then((m) => m.OperatorsPage));
const NodesPage = lazyPage<object>(() => import('./pages/nodes').then((m) => m.NodesPage));
const RegistriesPage = lazyPage<{ canWrite: boolean }>(() =>
  import('./pages/registries').then((m) => m.RegistriesPage),
);
const AlertsPage = lazyPage<object>(() => import('./pages/alerts').then((m) => m.AlertsPage));
const AppsPage = lazyPage<object>(() => import('./pages/apps').then((m) => m.AppsPage));
const AddonsPage = lazyPage<object>(() => import('./pages/addons').then((m) => m.AddonsPage));
const InvitePage = lazyPage<{ token: string; onDone: () => void }>(() =>
  import('./pages/invite').then((m) => m.InvitePage),
);

type Boot =
  | { kind: 'loading' }
  | { kind: 'setup' }
  | { kind: 'login' }
  | { kind: 'in'; user: User; permissions?: string[] }
  | { kind: 'error'; error: unknown };

/** The boot state from the session check's answers (or its failure). */
function bootFrom(r: PromiseSettledResult<[{ open: boolean }, unknown]>): Boot {
  if (r.status === 'rejected') return { kind: 'error', error: r.reason };
  const [s, m] = r.value;
  if (s.open) return { kind: 'setup' };
  if (m instanceof api.ApiError && m.status === 401) return { kind: 'login' };
  if (m instanceof Error) return { kind: 'error', error: m };
  const me = m as { user: User; permissions?: string[] };
  return { kind: 'in', user: me.user, permissions: me.permissions };
}

function Root({ initial }: { initial: Boot }) {
  const [boot, setBoot] = useState<Boot>(initial);
  const path = usePath();

  const refresh = async (first = false) => {
    try {
      // Both at once: the first paint of a signed-in operator waits for one round trip, not two.
      const [s, m] = first
        ? await bootCheck
        : await Promise.all([api.setupStatus(), api.me().catch((e: unknown) => e)]);
      setBoot(bootFrom({ status: 'fulfilled', value: [s, m] }));
    } catch (e) {
      setBoot({ kind: 'error', error: e });
    }
  };
  useEffect(() => {
    if (initial.kind === 'loading') void refresh(true);
    api.setUnauthorizedHandler(() => {
      stopSocket();
      setBoot({ kind: 'login' });
    });
  }, []);
  useEffect(() => {
    if (boot.kind === 'in') startSocket();
    else stopSocket();
  }, [boot.kind]);

  if (boot.kind === 'loading')
    return (
      <main class="center">
        <p class="muted">Loading…</p>
      </main>
    );
  if (boot.kind === 'error')
    return (
      <main class="center">
        <ErrorNote error={boot.error} />
        <button onClick={() => refresh()}>Retry</button>
      </main>
    );
  // An invitation or reset link opens without a session (and replaces one, if any); once accepted,
  // the dashboard starts afresh under the new session.
  const invite = /^\/invite\/([^/]+)$/.exec(path);
  if (invite && boot.kind !== 'setup')
    return <InvitePage token={invite[1]!} onDone={() => location.replace('/')} />;
  if (boot.kind === 'setup') {
    return (
      <SetupPage
        onDone={(user) => {
          setBoot({ kind: 'in', user });
          navigate('/', true);
        }}
      />
    );
  }
  if (boot.kind === 'login') {
    return (
      <LoginPage
        onDone={(user) => {
          setBoot({ kind: 'in', user });
          if (path === '/login' || path === '/setup') navigate('/', true);
        }}
      />
    );
  }
  return (
    <Shell
      user={boot.user}
      permissions={boot.permissions}
      onLogout={async () => {
        try {
          await api.logout();
        } finally {
          stopSocket();
          setBoot({ kind: 'login' });
          navigate('/login', true);
        }
      }}
    >
      <StepUpDialog totp={boot.user.totp_enabled} sso={boot.user.sso} />
      <Page path={path} user={boot.user} permissions={boot.permissions} />
    </Shell>
  );
}

function Page({ path, user, permissions }: { path: string; user: User; permissions?: string[] }) {
  const app = /^\/apps\/([^/]+)$/.exec(path);
  if (app) return <AppPage id={decodeURIComponent(app[1]!)} />;
  switch (path) {
    case '/':
    case '/login':
    case '/setup':
      return <OverviewPage />;
    case '/tokens':
      return <TokensPage />;
    case '/audit':
      return <AuditPage />;
    case '/security':
      return <SecurityPage />;
    case '/domains':
      return <DomainsPage />;
    case '/notifications':
      return <NotificationsPage />;
    case '/instance':
      return <InstancePage />;
    case '/profile':
      return <ProfilePage user={user} />;
    case '/operators':
      return <OperatorsPage />;
    case '/nodes':
      return <NodesPage />;
    case '/registries':
      return <RegistriesPage canWrite={permissions?.includes('instance.admin') ?? false} />;
    case '/alerts':
      return <AlertsPage />;
    case '/apps':
      return <AppsPage />;
    case '/addons':
      return <AddonsPage />;
    default:
      return (
        <main>
          <h1>Not found</h1>
          <p>
            No page at this address. <Link href="/">Back to the overview</Link>
          </p>
        </main>
      );
  }
}

function Shell({
  user,
  permissions,
  onLogout,
  children,
}: {
  user: User;
  permissions?: string[];
  onLogout: () => void;
  children: any;
}) {
  const ws = useSocketState();
  // What this operator may do (GET /api/auth/me): every page's controls follow it (access.tsx).
  // Known from the boot check; after a sign-in, asked for once.
  const held = useLoad<Access>(
    () => api.me().then(accessFrom),
    [user.id],
    permissions ? accessFrom({ user, permissions }) : undefined,
  );
  const access = held.data ?? NO_ACCESS;
  const may = (p: Parameters<typeof allowed>[1]) => allowed(access, p);
  // The Nodes link only in cluster mode (instance info says which, once per sign-in).
  const cluster = useLoad(
    () =>
      may('instance.read')
        ? api.instanceInfo().then((i) => i.cluster.mode === 'swarm')
        : Promise.resolve(false),
    [user.id, held.data],
  );
  return (
    <AccessProvider value={access}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/" class="brand">
          svc
        </Link>
        <nav aria-label="Main">
          <Link href="/">Overview</Link>
          {may('app.read') && <Link href="/apps">Apps</Link>}
          {may('app.read') && <Link href="/domains">Domains</Link>}
          {may('instance.read') && <Link href="/alerts">Alerts</Link>}
          {may('instance.read') && <Link href="/audit">Audit</Link>}
          {may('instance.read') && <Link href="/security">Security</Link>}
          {may('instance.admin') && <Link href="/notifications">Notifications</Link>}
          {may('instance.read') && <Link href="/registries">Registries</Link>}
          {may('instance.read') && <Link href="/instance">Instance</Link>}
          {cluster.data && <Link href="/nodes">Nodes</Link>}
          {may('operators.manage') && <Link href="/operators">Operators</Link>}
          <Link href="/tokens">Tokens</Link>
          <Link href="/profile">Profile</Link>
        </nav>
        <span class={`ws ws-${ws}`} role="status" aria-live="polite">
          {ws === 'open' ? 'live' : ws}
        </span>
        <span class="muted user">{user.username}</span>
        <button type="button" onClick={onLogout}>
          Log out
        </button>
      </header>
      <div id="main" class="content">
        {children}
      </div>
    </AccessProvider>
  );
}

// The first render waits for the session check and the overview's prefetched data (requested in
// parallel above): one render with data instead of a loading frame, then effects, then another
// render a frame or two later. index.html shows a static "Loading…" meanwhile.
const root = document.getElementById('root')!;
void Promise.allSettled([bootCheck, overviewReady()]).then(([b]) => {
  root.textContent = '';
  render(<Root initial={bootFrom(b as PromiseSettledResult<[{ open: boolean }, unknown]>)} />, root);
});
