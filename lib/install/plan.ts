// `svc install` and `svc uninstall` as data: from the inputs and what the root holds now, the list
// of changes to make. Nothing here touches the host; lib/install/apply.ts makes the changes.
import { parseEnvFile } from '../config.js';
import {
  CADDY_ADMIN_DROPIN,
  CADDY_ADMIN_SOCKET,
  CADDY_API_DROPIN_DIR,
  CADDY_API_UNIT,
  CADDY_UNIT,
  CONFIG_DIR,
  DATA_DIR,
  DEFAULT_ENV_FILE,
  DOCKER_SOCKET,
  MANIFEST_FILE,
  SYSCTL_FILE,
  UNIT_FILE,
  UNIT_NAME,
  VENDOR_UNIT_DIR,
  wantsLink,
} from './paths.js';
import {
  adminSocketRuntime,
  caddyAdminDropIn,
  mergeEnvFile,
  sysctlText,
  SYSCTL_SETTINGS,
  unitText,
  type EnvValue,
} from './texts.js';

export interface PathState {
  type: 'file' | 'dir' | 'symlink';
  mode: number;
  uid: number;
  /** A file's text (only read for the files install writes). */
  text?: string;
  /** A symlink's target. */
  target?: string;
}

export interface HostState {
  /** false under --root: nothing is started, enabled through systemctl or installed with apt-get. */
  live: boolean;
  /** os-release's fields, or null when the file is absent. */
  os: Record<string, string> | null;
  /** Host path -> what is there (null: nothing). Holds every path the plans look at. */
  paths: Record<string, PathState | null>;
  /** Debian packages installed (from dpkg's status file). */
  packages: Set<string>;
  /** live and systemd is the running init. */
  systemd: boolean;
  /** Whether a unit is active now (live with systemd only). */
  active: Record<string, boolean>;
  /** Current kernel values (live only); null: this kernel does not have the setting. */
  sysctl: Record<string, string | null>;
}

export type Change =
  | { kind: 'dir'; path: string; mode: number; create: boolean }
  | {
      kind: 'file';
      path: string;
      mode: number;
      text: string;
      create: boolean;
      summary?: string;
      secret?: boolean;
    }
  | { kind: 'mode'; path: string; mode: number; from: number }
  | { kind: 'symlink'; path: string; target: string }
  | { kind: 'remove'; path: string; recursive?: boolean }
  /** A directory removed only when empty (other packages' drop-ins may share it). */
  | { kind: 'rmdir'; path: string }
  | { kind: 'command'; argv: string[] };

export interface Plan {
  changes: Change[];
  /** What the operator should know that is not a change (kept values, what --root leaves to the image). */
  notes: string[];
}

/** Paths both plans look at; state.ts reads exactly these. */
export const WATCHED_PATHS = [
  CONFIG_DIR,
  DEFAULT_ENV_FILE,
  MANIFEST_FILE,
  DATA_DIR,
  `${DATA_DIR}/master.key`,
  UNIT_FILE,
  SYSCTL_FILE,
  CADDY_API_DROPIN_DIR,
  CADDY_ADMIN_DROPIN,
  wantsLink(UNIT_NAME),
  wantsLink(CADDY_API_UNIT),
  wantsLink(CADDY_UNIT),
  DOCKER_SOCKET,
  '/usr/bin/caddy',
];

export const REQUIRED_PACKAGES = ['docker.io', 'caddy'] as const;

export function missingPackages(state: HostState): string[] {
  return REQUIRED_PACKAGES.filter((p) => !state.packages.has(p));
}

/** Debian 12+ or Ubuntu 22.04+; anything else gets the sentence that says why not. */
export function supportedOs(
  os: Record<string, string> | null,
): { ok: true; name: string } | { ok: false; reason: string } {
  if (!os) return { ok: false, reason: 'no /etc/os-release: cannot tell which system this is' };
  const name = os.PRETTY_NAME || `${os.ID ?? '?'} ${os.VERSION_ID ?? ''}`.trim();
  const version = Number.parseFloat(os.VERSION_ID ?? '');
  if (os.ID === 'debian' && version >= 12) return { ok: true, name };
  if (os.ID === 'ubuntu' && version >= 22.04) return { ok: true, name };
  return {
    ok: false,
    reason: `${name} is not supported: svc install knows Debian 12 or later and Ubuntu 22.04 or later`,
  };
}

export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!.replace(/^(["'])(.*)\1$/, '$2');
  }
  return out;
}

export interface Manifest {
  /** Units install enabled that were not enabled before. */
  enabled: string[];
  /** Units install disabled that were enabled before. */
  disabled: string[];
}

export function parseManifest(text: string | undefined): Manifest {
  try {
    const m = JSON.parse(text ?? '') as Partial<Manifest>;
    const list = (v: unknown) =>
      Array.isArray(v)
        ? v.filter((x): x is string => typeof x === 'string' && /^[a-z0-9@._-]+\.service$/.test(x))
        : [];
    return { enabled: list(m.enabled), disabled: list(m.disabled) };
  } catch {
    return { enabled: [], disabled: [] };
  }
}

const manifestText = (m: Manifest) =>
  JSON.stringify(
    { enabled: [...new Set(m.enabled)].sort(), disabled: [...new Set(m.disabled)].sort() },
    null,
    2,
  ) + '\n';

export interface InstallInput {
  node: string;
  cli: string;
  baseDomain?: string;
  acmeEmail?: string;
}

/** A directory with this mode: created, or its mode corrected. */
function dir(state: HostState, path: string, mode: number): Change[] {
  const s = state.paths[path];
  if (!s) return [{ kind: 'dir', path, mode, create: true }];
  if (s.type !== 'dir') throw new Error(`${path} exists and is not a directory`);
  return (s.mode & 0o7777) === mode ? [] : [{ kind: 'mode', path, mode, from: s.mode & 0o7777 }];
}

/** A file with this text and mode: written when the text differs, else at most a chmod. */
function file(
  state: HostState,
  path: string,
  mode: number,
  text: string,
  extra: { summary?: string; secret?: boolean } = {},
): Change[] {
  const s = state.paths[path];
  if (s && s.type !== 'file') throw new Error(`${path} exists and is not a regular file`);
  if (!s || s.text !== text) return [{ kind: 'file', path, mode, text, create: !s, ...extra }];
  return (s.mode & 0o7777) === mode ? [] : [{ kind: 'mode', path, mode, from: s.mode & 0o7777 }];
}

/** The environment file's values: what install sets when the file does not have them yet. */
export function wantedEnv(
  input: InstallInput,
  state: HostState,
  randomHex: (bytes: number) => string,
): { values: EnvValue[]; notes: string[] } {
  const notes: string[] = [];
  const values: EnvValue[] = [{ key: 'SVC_DATA_DIR', value: DATA_DIR }];
  // A data directory that already holds a key file (an earlier manual setup) keeps using it:
  // a new SVC_MASTER_KEY would win over it and could not open what it sealed.
  if (state.paths[`${DATA_DIR}/master.key`])
    notes.push(`${DATA_DIR}/master.key exists: it stays the master key (no SVC_MASTER_KEY generated).`);
  else values.push({ key: 'SVC_MASTER_KEY', value: randomHex(32), secret: true });
  values.push({ key: 'SVC_METRICS_TOKEN', value: randomHex(24), secret: true });
  values.push({ key: 'SVC_CADDY_ADMIN', value: CADDY_ADMIN_SOCKET });
  if (input.baseDomain) {
    values.push({ key: 'SVC_BASE_DOMAIN', value: input.baseDomain });
    // Operators reach the API through the control domain (HTTPS by Caddy); the plain port stays local.
    values.push({ key: 'SVC_HOST', value: '127.0.0.1' });
    values.push({ key: 'SVC_EXPOSURE', value: 'public' });
  }
  if (input.acmeEmail) values.push({ key: 'SVC_ACME_EMAIL', value: input.acmeEmail });
  return { values, notes };
}

export function planInstall(
  input: InstallInput,
  state: HostState,
  randomHex: (bytes: number) => string,
): Plan {
  const out: Plan = { changes: [], notes: [] };
  const { changes, notes } = out;
  changes.push(...dir(state, CONFIG_DIR, 0o700));
  changes.push(...dir(state, DATA_DIR, 0o700));
  const envText = planEnvFile(input, state, randomHex, out);

  const unit = unitText({ node: input.node, cli: input.cli });
  const unitChanges = file(state, UNIT_FILE, 0o644, unit);
  changes.push(...unitChanges);
  const unitWritten = unitChanges.some((c) => c.kind === 'file');
  changes.push(...file(state, SYSCTL_FILE, 0o644, sysctlText()));
  const dropInWritten = planCaddyAdmin(state, envText, out);
  if (state.live) planSysctls(state, out);

  // Units: enabled is the wants symlink (what `systemctl enable` writes), so the same test holds
  // under --root and on the host; under --root the symlink is written instead of calling systemctl.
  const manifest = parseManifest(state.paths[MANIFEST_FILE]?.text);
  const units = planUnits(state, manifest, { unitWritten, dropInWritten });
  // Written before the units change, so a run interrupted after enabling still knows what it enabled.
  const m = manifestText(manifest);
  if (m !== manifestText(parseManifest('{}')) || state.paths[MANIFEST_FILE])
    changes.push(...file(state, MANIFEST_FILE, 0o600, m));
  changes.push(...units);

  const missing = missingPackages(state);
  if (!state.live && missing.length)
    notes.push(`Not installed under the root (the image must provide them): ${missing.join(', ')}.`);
  return out;
}

/** The environment file: wanted values added, existing ones kept. Returns the file's text after. */
function planEnvFile(
  input: InstallInput,
  state: HostState,
  randomHex: (bytes: number) => string,
  { changes, notes }: Plan,
): string {
  const envState = state.paths[DEFAULT_ENV_FILE];
  if (envState && envState.type !== 'file')
    throw new Error(`${DEFAULT_ENV_FILE} exists and is not a regular file`);
  const wanted = wantedEnv(input, state, randomHex);
  notes.push(...wanted.notes);
  const merged = mergeEnvFile(envState?.text ?? null, wanted.values);
  const kept = wanted.values.filter(
    (v) => !merged.added.includes(v) && (v.key === 'SVC_BASE_DOMAIN' || v.key === 'SVC_ACME_EMAIL'),
  );
  for (const v of kept)
    notes.push(`${v.key} is already set in ${DEFAULT_ENV_FILE}: kept as it is (edit the file to change it).`);
  const summary = merged.added
    .map((v) => (v.secret ? `${v.key} (generated)` : `${v.key}=${v.value}`))
    .join(', ');
  changes.push(
    ...file(state, DEFAULT_ENV_FILE, 0o600, merged.text, {
      summary: summary ? `sets ${summary}` : undefined,
      secret: true,
    }),
  );
  return merged.text;
}

/**
 * Caddy's admin endpoint follows the environment file: install never changes a value there, so an
 * older file's TCP endpoint stays (svc doctor warns and says how to move it) and gets no drop-in,
 * which would move Caddy away from where the control plane looks for it. Returns whether the
 * drop-in is (re)written.
 */
function planCaddyAdmin(state: HostState, envText: string, { changes, notes }: Plan): boolean {
  const adminAddress = parseEnvFile(envText).SVC_CADDY_ADMIN;
  if (!adminSocketRuntime(adminAddress)) {
    notes.push(
      `SVC_CADDY_ADMIN is ${adminAddress ?? 'unset'}, not a unix socket under /run: Caddy's admin endpoint is left where it is ` +
        '(`svc doctor` says how to move it to a socket).',
    );
    return false;
  }
  const d = state.paths[CADDY_API_DROPIN_DIR];
  if (d && d.type !== 'dir') throw new Error(`${CADDY_API_DROPIN_DIR} exists and is not a directory`);
  if (!d) changes.push({ kind: 'dir', path: CADDY_API_DROPIN_DIR, mode: 0o755, create: true });
  const dropIn = file(state, CADDY_ADMIN_DROPIN, 0o644, caddyAdminDropIn(adminAddress!));
  changes.push(...dropIn);
  return dropIn.some((c) => c.kind === 'file');
}

/** The running kernel's settings brought to the file's values now (on the live host). */
function planSysctls(state: HostState, { changes, notes }: Plan): void {
  for (const s of SYSCTL_SETTINGS) {
    const now = state.sysctl[s.key];
    if (now === null || now === undefined)
      notes.push(
        `This kernel has no ${s.key} (it needs 5.14 or later): Caddy reloads may reset queued connections.`,
      );
    else if (now !== s.value)
      changes.push({ kind: 'command', argv: ['sysctl', '-w', `${s.key}=${s.value}`] });
  }
}

/** The units to enable, start or restart (and the Caddyfile service to disable); updates the manifest. */
function planUnits(
  state: HostState,
  manifest: ReturnType<typeof parseManifest>,
  written: { unitWritten: boolean; dropInWritten: boolean },
): Change[] {
  const enabled = (u: string) => Boolean(state.paths[wantsLink(u)]);
  const units: Change[] = [];
  if (state.live && (written.unitWritten || written.dropInWritten))
    units.push({ kind: 'command', argv: ['systemctl', 'daemon-reload'] });
  if (enabled(CADDY_UNIT)) {
    // The Caddyfile service holds the same ports and admin endpoint: only one of the two can run.
    manifest.disabled.push(CADDY_UNIT);
    units.push(
      state.live
        ? { kind: 'command', argv: ['systemctl', 'disable', '--now', CADDY_UNIT] }
        : { kind: 'remove', path: wantsLink(CADDY_UNIT) },
    );
  } else if (state.live && state.active[CADDY_UNIT])
    units.push({ kind: 'command', argv: ['systemctl', 'stop', CADDY_UNIT] });
  for (const [u, target] of [
    [CADDY_API_UNIT, `${VENDOR_UNIT_DIR}/${CADDY_API_UNIT}`],
    [UNIT_NAME, UNIT_FILE],
  ] as const) {
    if (!enabled(u)) {
      manifest.enabled.push(u);
      units.push(
        state.live
          ? { kind: 'command', argv: ['systemctl', 'enable', '--now', u] }
          : { kind: 'symlink', path: wantsLink(u), target },
      );
    } else if (state.live && !state.active[u])
      units.push({ kind: 'command', argv: ['systemctl', 'start', u] });
    else if (state.live && u === UNIT_NAME && written.unitWritten)
      units.push({ kind: 'command', argv: ['systemctl', 'restart', u] });
    // A running Caddy keeps its admin endpoint until it starts again with the drop-in (and its RuntimeDirectory).
    else if (state.live && u === CADDY_API_UNIT && written.dropInWritten)
      units.push({ kind: 'command', argv: ['systemctl', 'restart', u] });
  }
  if (state.live && !state.systemd && units.some((c) => c.kind === 'command')) {
    throw new Error(
      'systemd is not running here (no /run/systemd/system): svc install needs it to run the service; use --root DIR to prepare an image',
    );
  }
  return units;
}

export interface UninstallInput {
  purge: boolean;
}

export function planUninstall(input: UninstallInput, state: HostState): Plan {
  const changes: Change[] = [];
  const notes: string[] = [];
  const has = (p: string) => Boolean(state.paths[p]);
  const manifest = parseManifest(state.paths[MANIFEST_FILE]?.text);
  let reload = false;
  if (has(wantsLink(UNIT_NAME)) || (state.live && state.active[UNIT_NAME])) {
    changes.push(
      state.live
        ? { kind: 'command', argv: ['systemctl', 'disable', '--now', UNIT_NAME] }
        : { kind: 'remove', path: wantsLink(UNIT_NAME) },
    );
  }
  if (has(UNIT_FILE)) {
    changes.push({ kind: 'remove', path: UNIT_FILE });
    reload = state.live;
  }
  // The drop-in goes with caddy-api when uninstall disables it too, or when nothing runs it. A caddy-api
  // that stays enabled keeps it: its autosaved config holds the admin endpoint on the socket, and without
  // the drop-in's RuntimeDirectory it could not open that at its next start.
  const caddyApiStays = has(wantsLink(CADDY_API_UNIT)) && !manifest.enabled.includes(CADDY_API_UNIT);
  if (has(CADDY_ADMIN_DROPIN) && caddyApiStays) {
    notes.push(
      `Kept ${CADDY_ADMIN_DROPIN}: ${CADDY_API_UNIT} was enabled before svc install and stays so, with its admin endpoint on the socket.`,
    );
  } else if (has(CADDY_ADMIN_DROPIN)) {
    changes.push({ kind: 'remove', path: CADDY_ADMIN_DROPIN });
    if (has(CADDY_API_DROPIN_DIR)) changes.push({ kind: 'rmdir', path: CADDY_API_DROPIN_DIR });
    reload = state.live;
    notes.push(
      "Caddy's autosaved config (/var/lib/caddy/.config/caddy/autosave.json) keeps its admin endpoint on the socket: " +
        `remove that file before starting ${CADDY_API_UNIT} without svc.`,
    );
  }
  if (reload) changes.push({ kind: 'command', argv: ['systemctl', 'daemon-reload'] });
  if (has(SYSCTL_FILE)) {
    changes.push({ kind: 'remove', path: SYSCTL_FILE });
    notes.push('The kernel keeps net.ipv4.tcp_migrate_req until the next boot (it harms nothing).');
  }
  for (const u of manifest.enabled.filter((u) => u !== UNIT_NAME && has(wantsLink(u)))) {
    changes.push(
      state.live
        ? { kind: 'command', argv: ['systemctl', 'disable', '--now', u] }
        : { kind: 'remove', path: wantsLink(u) },
    );
  }
  for (const u of manifest.disabled.filter((u) => !has(wantsLink(u)))) {
    changes.push(
      state.live
        ? { kind: 'command', argv: ['systemctl', 'enable', '--now', u] }
        : { kind: 'symlink', path: wantsLink(u), target: `${VENDOR_UNIT_DIR}/${u}` },
    );
  }
  if (has(MANIFEST_FILE)) changes.push({ kind: 'remove', path: MANIFEST_FILE });
  if (input.purge) {
    if (has(DEFAULT_ENV_FILE)) changes.push({ kind: 'remove', path: DEFAULT_ENV_FILE });
    if (has(CONFIG_DIR)) changes.push({ kind: 'remove', path: CONFIG_DIR, recursive: true });
    if (has(DATA_DIR)) changes.push({ kind: 'remove', path: DATA_DIR, recursive: true });
  } else if (has(DEFAULT_ENV_FILE) || has(DATA_DIR)) {
    notes.push(
      `Kept ${DEFAULT_ENV_FILE} (the master key) and ${DATA_DIR} (the data); \`svc uninstall --purge\` removes them.`,
    );
  }
  notes.push('Packages (docker.io, caddy) stay installed.');
  return { changes, notes };
}

/** One line per change, as the operator reads it; never a secret. */
export function describeChange(c: Change): string {
  const mode = (m: number) => m.toString(8).padStart(4, '0');
  switch (c.kind) {
    case 'dir':
      return `create ${c.path}/ (directory, ${mode(c.mode)}, root)`;
    case 'file':
      return `${c.create ? 'create' : 'update'} ${c.path} (${mode(c.mode)}, root)${c.summary ? `: ${c.summary}` : ''}`;
    case 'mode':
      return `chmod ${c.path} ${mode(c.from)} -> ${mode(c.mode)}`;
    case 'symlink':
      return `link ${c.path} -> ${c.target}`;
    case 'remove':
      return `remove ${c.path}${c.recursive ? '/ (and everything in it)' : ''}`;
    case 'rmdir':
      return `remove ${c.path}/ (if empty)`;
    case 'command':
      return `run ${c.argv.join(' ')}`;
  }
}

/** The text a dry run shows under a file change: secrets replaced. */
export function previewText(c: Extract<Change, { kind: 'file' }>): string {
  if (!c.secret) return c.text;
  return c.text.replace(/^(\s*(?:export\s+)?(SVC_MASTER_KEY|SVC_METRICS_TOKEN)\s*=).*$/gm, '$1<secret>');
}
