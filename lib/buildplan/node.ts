// Node: the package manager from the lock file, the version from .nvmrc, .node-version or engines,
// a server started from its `start` script or `main` file, or a front-end build served as files.
import { caddyStage } from './caddy.js';
import { plainWords, showArgv, startArgv } from './command.js';
import { Dockerfile, planOf } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { command, port as checkPort, relPath, versionInput } from './validate.js';
import { reduceVersion } from './versions.js';

export const NODE_VERSIONS = ['18', '20', '22', '24'] as const;
export const NODE_DEFAULT = '22';
const LTS: Record<string, string> = { hydrogen: '18', iron: '20', jod: '22', krypton: '24' };
export const nodeImage = (v: string) => `node:${v}-bookworm-slim`;
const NODE_PORT = 3000;
const STATIC_PORT = 8080;

interface Pkg {
  scripts: Record<string, unknown>;
  engines?: { node?: unknown };
  main?: unknown;
  deps: Set<string>;
  workspaces: boolean;
  packageManager?: unknown;
}

type Manager = 'npm' | 'pnpm' | 'yarn' | 'yarn-berry';
interface Facts {
  pkg: Pkg;
  pm: Manager;
  lock: string | null;
  /** Files copied before the install, so the install layer is keyed by them alone. */
  manifests: string[];
  version: string;
  from: string[];
  warnings: string[];
}

export async function readPackageJson(files: RepoFiles): Promise<Pkg | null> {
  const raw = await files.read('package.json');
  if (raw === null) return null;
  let j: unknown;
  try {
    j = JSON.parse(raw);
  } catch {
    throw new PlanError('package.json', 'file', 'is not valid JSON');
  }
  if (!j || typeof j !== 'object' || Array.isArray(j))
    throw new PlanError('package.json', 'file', 'is not a JSON object');
  const o = j as Record<string, unknown>;
  const obj = (v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  return {
    scripts: obj(o.scripts),
    engines: obj(o.engines),
    main: o.main,
    deps: new Set([...Object.keys(obj(o.dependencies)), ...Object.keys(obj(o.devDependencies))]),
    workspaces: o.workspaces !== undefined,
    packageManager: o.packageManager,
  };
}

async function nodeVersion(
  files: RepoFiles,
  pkg: Pkg,
  o: StackOverride | undefined,
  from: string[],
  warnings: string[],
): Promise<string> {
  let input: string | null = null;
  let source = '';
  if (o?.version !== undefined)
    [input, source] = [versionInput('(override)', 'version', o.version), '(override)'];
  for (const f of ['.nvmrc', '.node-version']) {
    if (input !== null) break;
    const t = await files.read(f, 1024);
    if (t !== null && t.trim()) [input, source] = [versionInput(f, 'version', t), f];
  }
  if (input === null && pkg.engines?.node !== undefined)
    [input, source] = [versionInput('package.json', 'engines.node', pkg.engines.node), 'package.json'];
  if (input === null) return NODE_DEFAULT;
  if (source !== '(override)' && !from.includes(source)) from.push(source);
  const alias = /^lts\/(.+)$/i.exec(input)?.[1]?.toLowerCase();
  let reduced;
  if (alias !== undefined) {
    const v = alias === '*' ? NODE_DEFAULT : LTS[alias];
    reduced = v
      ? {
          version: v,
          warning: `node version "${input}" (${source}) reduced to the node ${v} image`,
          fallback: false,
        }
      : {
          version: NODE_DEFAULT,
          warning: `node version "${input}" (${source}) is not a supported line; using node ${NODE_DEFAULT}`,
          fallback: true,
        };
  } else if (/^(node|latest|current|stable)$/i.test(input)) {
    const v = NODE_VERSIONS[NODE_VERSIONS.length - 1]!;
    reduced = {
      version: v,
      warning: `node version "${input}" (${source}) reduced to the node ${v} image`,
      fallback: false,
    };
  } else reduced = reduceVersion(input, NODE_VERSIONS, NODE_DEFAULT, { name: 'node', source, tilde: 'npm' });
  if (source === '(override)' && reduced.fallback) {
    throw new PlanError(
      source,
      'version',
      `"${input}" is not a supported node version (${NODE_VERSIONS.join(', ')})`,
    );
  }
  if (reduced.warning) warnings.push(reduced.warning);
  return reduced.version;
}

async function facts(files: RepoFiles, pkg: Pkg, o: StackOverride | undefined): Promise<Facts> {
  const from = ['package.json'];
  const warnings: string[] = [];
  const has = (f: string) => files.exists(f);
  let pm: Manager = 'npm';
  let lock: string | null = null;
  const declared = typeof pkg.packageManager === 'string' ? pkg.packageManager : '';
  if (await has('pnpm-lock.yaml')) [pm, lock] = ['pnpm', 'pnpm-lock.yaml'];
  else if (await has('yarn.lock')) {
    lock = 'yarn.lock';
    pm = (await has('.yarnrc.yml')) || /^yarn@([2-9]|\d{2,})\./.test(declared) ? 'yarn-berry' : 'yarn';
  } else if (await has('package-lock.json')) lock = 'package-lock.json';
  else if (await has('npm-shrinkwrap.json')) lock = 'npm-shrinkwrap.json';
  else {
    if (/^pnpm@/.test(declared)) pm = 'pnpm';
    else if (/^yarn@/.test(declared)) pm = /^yarn@1\./.test(declared) ? 'yarn' : 'yarn-berry';
    if (await has('bun.lockb')) warnings.push('bun.lockb found: bun is not supported; installing with npm');
    warnings.push('no lock file: dependencies are resolved afresh on every build');
  }
  if (lock) from.push(lock);
  const manifests = ['package.json', ...(lock ? [lock] : [])];
  for (const f of ['.npmrc', '.yarnrc', '.yarnrc.yml', 'pnpm-workspace.yaml'])
    if (await has(f)) manifests.push(f);
  const version = await nodeVersion(files, pkg, o, from, warnings);
  return { pkg, pm, lock, manifests, version, from, warnings };
}

const INSTALL: Record<Manager, [frozen: string, loose: string]> = {
  npm: ['npm ci', 'npm install'],
  pnpm: ['pnpm install --frozen-lockfile', 'pnpm install'],
  yarn: ['yarn install --frozen-lockfile', 'yarn install'],
  'yarn-berry': ['yarn install --immutable', 'yarn install'],
};
const PRUNE: Record<Manager, string | null> = {
  npm: 'npm prune --omit=dev',
  pnpm: 'pnpm prune --prod',
  yarn: 'yarn install --production --frozen-lockfile --ignore-scripts --prefer-offline',
  'yarn-berry': null,
};
/** The production-only install, for an app with nothing to build; yarn berry has none built in. */
const PROD_INSTALL: Record<Manager, [frozen: string, loose: string] | null> = {
  npm: ['npm ci --omit=dev', 'npm install --omit=dev'],
  pnpm: ['pnpm install --frozen-lockfile --prod', 'pnpm install --prod'],
  yarn: ['yarn install --frozen-lockfile --production', 'yarn install --production'],
  'yarn-berry': null,
};
/** The package's own install scripts run on a local install and often need dev dependencies (husky). */
const OWN_INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];
const runScript = (pm: Manager, name: string) =>
  `${pm === 'npm' ? 'npm' : pm === 'pnpm' ? 'pnpm' : 'yarn'} run ${name}`;

/** Front-end tools whose build writes plain files, and where; their `start` is a dev server. */
const BUILDERS: [tool: string, dep: string, dir: string][] = [
  ['vite', 'vite', 'dist'],
  ['react-scripts', 'react-scripts', 'build'],
  ['astro', 'astro', 'dist'],
  ['parcel', 'parcel', 'dist'],
  ['gatsby', 'gatsby', 'public'],
  ['vue-cli-service', '@vue/cli-service', 'dist'],
  ['ng', '@angular/cli', 'dist'],
];

function staticBuilder(pkg: Pkg, build: string | null): { tool: string; dir: string } | null {
  const first = build ? (plainWords(build)?.[0] ?? build.split(' ')[0]) : null;
  const hit = BUILDERS.find(([tool]) => tool === first) ?? BUILDERS.find(([, dep]) => pkg.deps.has(dep));
  if (!hit) return null;
  if (hit[1] === 'astro' && pkg.deps.has('@astrojs/node')) return null;
  const svelteStatic = pkg.deps.has('@sveltejs/adapter-static');
  return { tool: hit[0], dir: svelteStatic ? 'build' : hit[2] };
}

const isDevServer = (start: string) =>
  /^(vite|react-scripts|astro|parcel|gatsby|ng|vue-cli-service)( |$)/.test(start);

/** The install stage, keyed by the manifests alone (unless workspaces need every package.json). */
function depsStage(df: Dockerfile, f: Facts, install: string, o: StackOverride | undefined): void {
  df.from(nodeImage(f.version), 'deps').workdir('/app');
  if (f.pm !== 'npm') df.env({ COREPACK_ENABLE_DOWNLOAD_PROMPT: 0 }).run('corepack enable');
  if (f.pkg.workspaces) {
    f.warnings.push(
      'npm/yarn workspaces: every package.json is needed to install, so the install layer is not cached apart',
    );
    df.copy(['.'], '.');
  } else df.copy(f.manifests, './');
  df.runStep(install, o?.install !== undefined);
}

/** The build stage: the source over the installed dependencies, then the build. */
function buildStage(df: Dockerfile, f: Facts, build: string | null, o: StackOverride | undefined): void {
  df.from('deps', 'build');
  if (!f.pkg.workspaces) df.copy(['.'], '.');
  if (build !== null) df.runStep(build, o?.build !== undefined);
}

export async function planNode(
  files: RepoFiles,
  o: StackOverride | undefined,
  forceStatic: boolean,
): Promise<Plan | null> {
  const pkg = await readPackageJson(files);
  if (!pkg) return null;
  const script = (name: string) =>
    pkg.scripts[name] === undefined ? null : command('package.json', `scripts.${name}`, pkg.scripts[name]);
  const startScript = script('start');
  const buildScript = script('build');
  const f = await facts(files, pkg, o);
  const ownInstall = o?.install !== undefined ? command('(override)', 'install', o.install) : null;
  const install = ownInstall ?? INSTALL[f.pm][f.lock ? 0 : 1];
  const build =
    o?.build !== undefined
      ? command('(override)', 'build', o.build)
      : buildScript !== null
        ? runScript(f.pm, 'build')
        : null;
  const builder = staticBuilder(pkg, buildScript);
  const main = pkg.main === undefined ? null : relPath('package.json', 'main', pkg.main);
  const server = o?.stack === 'node';
  const frontEnd = !server && !!builder && build !== null;
  const { argv, nodeBin } = forceStatic
    ? { argv: null, nodeBin: false }
    : await startCommand(files, f, o, { startScript, main, server, frontEnd, built: build !== null });
  if (server && !argv)
    throw new PlanError(
      'package.json',
      'scripts.start',
      'is missing, and there is no main file to run; give a start command',
    );
  const publishOverride =
    o?.publish_dir !== undefined ? relPath('(override)', 'publish_dir', o.publish_dir) : null;
  if (!argv && !build) return null;
  if (!argv) return frontEndPlan(f, o, { install, build: build!, builder, publishOverride });
  return serverPlan(f, o, { argv, nodeBin, install, ownInstall, build });
}

/** What the container runs: the override, the start script, or a main file; null for a front end. */
async function startCommand(
  files: RepoFiles,
  f: Facts,
  o: StackOverride | undefined,
  how: {
    startScript: string | null;
    main: string | null;
    server: boolean;
    frontEnd: boolean;
    built: boolean;
  },
): Promise<{ argv: string[] | null; nodeBin: boolean }> {
  const { startScript, main } = how;
  if (o?.start !== undefined) return { argv: startArgv('(override)', 'start', o.start), nodeBin: false };
  if (startScript !== null && (how.server || !isDevServer(startScript))) {
    const words = plainWords(startScript);
    if (!words) f.warnings.push('the start script needs a shell; it runs through `npm run start`');
    return { argv: words ?? ['npm', 'run', 'start'], nodeBin: !!words && words[0] !== 'node' };
  }
  if (how.frontEnd) return { argv: null, nodeBin: false };
  // An explicit main may be build output (dist/index.js), so it need not exist before the build.
  if (main !== null && (how.built || (await files.exists(main))))
    return { argv: ['node', main], nodeBin: false };
  for (const m of ['server.js', 'index.js', 'app.js', 'main.js'])
    if (await files.exists(m)) return { argv: ['node', m], nodeBin: false };
  return { argv: null, nodeBin: false };
}

/** A front-end build: node only builds; Caddy serves what it wrote. */
function frontEndPlan(
  f: Facts,
  o: StackOverride | undefined,
  parts: {
    install: string;
    build: string;
    builder: { tool: string; dir: string } | null;
    publishOverride: string | null;
  },
): Plan {
  const { builder, publishOverride } = parts;
  const df = new Dockerfile();
  const dir = publishOverride ?? builder?.dir ?? 'dist';
  const guess =
    'the build script is not a known front-end tool; serving its `dist` folder (set publish_dir if it writes elsewhere)';
  if (!builder && !publishOverride) f.warnings.push(guess);
  if (builder?.tool === 'ng' && !publishOverride)
    f.warnings.push('Angular writes dist/<project>/browser; set publish_dir to that folder');
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : STATIC_PORT;
  depsStage(df, f, parts.install, o);
  buildStage(df, f, parts.build, o);
  const served = caddyStage(df, p, {
    src: `/app/${dir}`,
    from: 'build',
    site: ['try_files {path} {path}/ /index.html'],
  });
  return planOf(df, {
    stack: 'static',
    detected_from: f.from,
    ...served,
    install: parts.install,
    build: parts.build,
    warnings: f.warnings,
  });
}

/** A node server: dependencies (pruned where the manager can), the build, and the source. */
function serverPlan(
  f: Facts,
  o: StackOverride | undefined,
  parts: {
    argv: string[];
    nodeBin: boolean;
    install: string;
    ownInstall: string | null;
    build: string | null;
  },
): Plan {
  const { argv, install, ownInstall, build } = parts;
  const df = new Dockerfile();
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : NODE_PORT;
  const env = {
    NODE_ENV: 'production',
    PORT: p,
    ...(parts.nodeBin ? { PATH: '/app/node_modules/.bin:$PATH' } : {}),
  };
  const prune = ownInstall === null ? PRUNE[f.pm] : null;
  if (ownInstall === null && !PRUNE[f.pm])
    f.warnings.push('yarn berry: dev dependencies are not pruned from the image');
  const own = OWN_INSTALL_SCRIPTS.some((k) => f.pkg.scripts[k] !== undefined);
  const prodInstall = PROD_INSTALL[f.pm]?.[f.lock ? 0 : 1];
  let shown = install;
  // The final stage's settings come before its copies: a source change then rebuilds only the
  // last copy (each instruction after a changed one is a new layer for the builder).
  if (f.pkg.workspaces) {
    // Every package keeps its node_modules beside it: pruned in place, the whole tree copied.
    depsStage(df, f, install, o);
    buildStage(df, f, build, o);
    if (prune) df.run(prune);
    df.from(nodeImage(f.version)).workdir('/app').env(env).user('node').expose(p).cmd(argv);
    df.copy(['/app'], '/app', { from: 'build', chown: 'node:node' });
  } else if (build === null) {
    // Nothing to build: only the production dependencies are installed, and the source is copied
    // after them, so a change to the source reuses the install and its copy. The package's own
    // install scripts may need dev dependencies: then everything is installed and pruned.
    if (ownInstall === null && prodInstall && !own) shown = prodInstall;
    depsStage(df, f, shown, o);
    if (shown === install && prune) df.run(prune);
    df.from(nodeImage(f.version)).workdir('/app').env(env).user('node').expose(p).cmd(argv);
    df.copy(['/app'], './', { from: 'deps', chown: 'node:node' });
    df.copy(['.'], '.', { chown: 'node:node' });
  } else {
    // The build needs every dependency; the image gets the pruned ones from a stage keyed by the
    // manifests alone, and the built tree without the build's node_modules.
    depsStage(df, f, install, o);
    if (prune) df.from('deps', 'prod').run(prune);
    buildStage(df, f, build, o);
    df.run('rm -rf node_modules');
    df.from(nodeImage(f.version)).workdir('/app').env(env).user('node').expose(p).cmd(argv);
    df.copy(['/app'], './', { from: prune ? 'prod' : 'deps', chown: 'node:node' });
    df.copy(['/app'], './', { from: 'build', chown: 'node:node' });
  }
  const runtime = { name: 'node', version: f.version, image: nodeImage(f.version) };
  return planOf(df, {
    stack: 'node',
    detected_from: f.from,
    runtime,
    install: shown,
    build,
    start: showArgv(argv),
    port: p,
    warnings: f.warnings,
  });
}
