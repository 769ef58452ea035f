// Go: modules downloaded in their own layer keyed by go.mod and go.sum, a static binary built from the
// main package (the root or one under cmd/), run from distroless as its non-root user.
import { showArgv, startArgv } from './command.js';
import { DISTROLESS } from './caddy.js';
import { Dockerfile, addAppUser, APP_USER, planOf, shq } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { command, port as checkPort, relPath, versionInput } from './validate.js';
import { reduceVersion } from './versions.js';

export const GO_VERSIONS = ['1.21', '1.22', '1.23', '1.24', '1.25'] as const;
export const GO_DEFAULT = '1.24';
const PORT = 8080;
/** Modules that need cgo, so the binary links libc and runs on Debian instead of distroless. */
const CGO = ['github.com/mattn/go-sqlite3'];

function goVersion(directive: string | null, o: StackOverride | undefined, warnings: string[]): string {
  if (o?.version !== undefined) {
    const input = versionInput('(override)', 'version', o.version);
    const r = reduceVersion(input, GO_VERSIONS, GO_DEFAULT, {
      name: 'go',
      source: '(override)',
      tilde: 'npm',
    });
    if (r.fallback)
      throw new PlanError(
        '(override)',
        'version',
        `"${input}" is not a supported go version (${GO_VERSIONS.join(', ')})`,
      );
    if (r.warning) warnings.push(r.warning);
    return r.version;
  }
  if (directive === null) return GO_DEFAULT;
  const input = versionInput('go.mod', 'go directive', directive);
  // The directive is a minimum, and a line's image carries its newest patch: 1.22.3 builds on 1.22.
  const line = /^(\d+\.\d+)(\.\d+)?$/.exec(input)?.[1];
  if (line && GO_VERSIONS.includes(line as never)) return line;
  const r = reduceVersion(`>=${input}`, GO_VERSIONS, GO_DEFAULT, {
    name: 'go',
    source: 'go.mod',
    tilde: 'npm',
  });
  if (!r.fallback) {
    warnings.push(r.warning!);
    return r.version;
  }
  const newest = GO_VERSIONS[GO_VERSIONS.length - 1]!;
  warnings.push(
    `go directive "${input}" is newer than the supported lines or not understood; using go ${newest}, which may refuse it`,
  );
  return newest;
}

async function isMain(files: RepoFiles, dir: string): Promise<boolean> {
  const entries = (await files.list(dir)).filter(
    (e) => !e.dir && e.name.endsWith('.go') && !e.name.endsWith('_test.go'),
  );
  for (const e of entries.slice(0, 50)) {
    const src = await files.read(dir ? `${dir}/${e.name}` : e.name, 256 * 1024).catch(() => null);
    if (src !== null && /^package\s+main\b/m.test(src)) return true;
  }
  return false;
}

/** The main package: the root, or the one cmd/<name> (the module's own name wins among several). */
async function mainPackage(
  files: RepoFiles,
  module: string | null,
  warnings: string[],
): Promise<string | null> {
  if (await isMain(files, '')) return '.';
  const cmds: string[] = [];
  for (const e of await files.list('cmd'))
    if (e.dir && (await isMain(files, `cmd/${e.name}`))) cmds.push(`cmd/${e.name}`);
  if (!cmds.length) return null;
  const own = module?.split('/').pop();
  const pick = cmds.find((c) => c === `cmd/${own}`) ?? cmds[0]!;
  if (cmds.length > 1)
    warnings.push(
      `several main packages under cmd/ (${cmds.join(', ')}); building ${pick} (override build to choose)`,
    );
  return relPath('cmd/', 'main package', pick);
}

export async function planGo(files: RepoFiles, o: StackOverride | undefined): Promise<Plan | string | null> {
  const mod = await files.read('go.mod');
  if (mod === null) return null;
  const from = ['go.mod'];
  const warnings: string[] = [];
  const directive = /^go\s+(\S+)\s*$/m.exec(mod)?.[1] ?? null;
  const module = /^module\s+(\S+)/m.exec(mod)?.[1] ?? null;
  const version = goVersion(directive, o, warnings);
  const sum = await files.exists('go.sum');
  if (sum) from.push('go.sum');
  const vendored = await files.exists('vendor/modules.txt');
  const cgo = CGO.some((m) => mod.includes(m));
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : PORT;

  let build: string;
  if (o?.build !== undefined) {
    build = command('(override)', 'build', o.build);
    warnings.push('the build override must write the program to /out/server');
  } else {
    const pkg = await mainPackage(files, module, warnings);
    if (pkg === null)
      return 'go.mod found, but no main package (package main at the root or in cmd/<name>/); give a build command';
    build = `CGO_ENABLED=${cgo ? 1 : 0} go build -trimpath -ldflags='-s -w' -o /out/server ${shq(pkg === '.' ? '.' : `./${pkg}`)}`;
  }
  const install =
    o?.install !== undefined
      ? command('(override)', 'install', o.install)
      : vendored
        ? null
        : 'go mod download';
  const argv = o?.start !== undefined ? startArgv('(override)', 'start', o.start, cgo) : ['/server'];
  const image = cgo ? 'debian:bookworm-slim' : DISTROLESS;

  const df = new Dockerfile();
  df.from(`golang:${version}-bookworm`, 'build').workdir('/src');
  df.copy(sum ? ['go.mod', 'go.sum'] : ['go.mod'], './');
  if (install !== null) df.runStep(install, o?.install !== undefined);
  df.copy(['.'], '.');
  df.runStep(build, o?.build !== undefined);
  df.from(image);
  if (cgo) addAppUser(df);
  df.copy(['/out/server'], '/server', { from: 'build' });
  df.env({ PORT: p });
  // distroless/static has no user table entry to add; 65532 is its documented nonroot id.
  df.user(cgo ? APP_USER : '65532:65532')
    .expose(p)
    .cmd(argv);
  const runtime = { name: 'go', version, image: `golang:${version}-bookworm` };
  return planOf(df, {
    stack: 'go',
    detected_from: from,
    runtime,
    install,
    build,
    start: showArgv(argv),
    port: p,
    warnings,
  });
}
