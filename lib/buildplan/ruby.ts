// Ruby: Bundler installs in the full image (compilers for native gems); the slim image gets the gems
// and the app. Rails runs `bin/rails server`, a Rack app puma when it is bundled.
import { showArgv, startArgv } from './command.js';
import { Dockerfile, addAppUser, aptInstall, APP_USER, planOf } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { command, port as checkPort, versionInput } from './validate.js';
import { reduceVersion } from './versions.js';

export const RUBY_VERSIONS = ['3.1', '3.2', '3.3', '3.4'] as const;
export const RUBY_DEFAULT = '3.3';
const PORT = 3000;
/** Gems whose native extension links a library the slim image lacks, and that library's package. */
const RUNTIME_LIBS: [gem: string, pkg: string][] = [
  ['pg', 'libpq5'],
  ['mysql2', 'libmariadb3'],
];
const RAILS_ENV = { RAILS_ENV: 'production', RAILS_LOG_TO_STDOUT: 1, RAILS_SERVE_STATIC_FILES: 1 };
const BUNDLE_ENV = {
  BUNDLE_DEPLOYMENT: 1,
  BUNDLE_WITHOUT: 'development:test',
  BUNDLE_PATH: '/usr/local/bundle',
};

async function rubyVersion(
  files: RepoFiles,
  gemfile: string,
  lock: string | null,
  o: StackOverride | undefined,
  from: string[],
  warnings: string[],
): Promise<string> {
  let input: string | null = null;
  let source = '';
  if (o?.version !== undefined)
    [input, source] = [versionInput('(override)', 'version', o.version), '(override)'];
  const rv = input === null ? await files.read('.ruby-version', 1024) : null;
  if (rv !== null && rv.trim())
    [input, source] = [versionInput('.ruby-version', 'version', rv).replace(/^ruby-/, ''), '.ruby-version'];
  const inGemfile = /^\s*ruby\s+["']([^"'\n]+)["']/m.exec(gemfile)?.[1];
  if (input === null && inGemfile !== undefined)
    [input, source] = [versionInput('Gemfile', 'ruby', inGemfile), 'Gemfile'];
  const inLock = lock && /^RUBY VERSION\s*\n\s+ruby (\S+)/m.exec(lock)?.[1];
  if (input === null && inLock)
    [input, source] = [versionInput('Gemfile.lock', 'RUBY VERSION', inLock), 'Gemfile.lock'];
  if (input === null) return RUBY_DEFAULT;
  if (source !== '(override)' && !from.includes(source)) from.push(source);
  const r = reduceVersion(input, RUBY_VERSIONS, RUBY_DEFAULT, { name: 'ruby', source, tilde: 'pessimistic' });
  if (source === '(override)' && r.fallback)
    throw new PlanError(
      source,
      'version',
      `"${input}" is not a supported ruby version (${RUBY_VERSIONS.join(', ')})`,
    );
  if (r.warning) warnings.push(r.warning);
  return r.version;
}

export async function planRuby(
  files: RepoFiles,
  o: StackOverride | undefined,
): Promise<Plan | string | null> {
  const gemfile = await files.read('Gemfile');
  if (gemfile === null) return null;
  const from = ['Gemfile'];
  const warnings: string[] = [];
  const lock = await files.read('Gemfile.lock');
  if (lock !== null) from.push('Gemfile.lock');
  else warnings.push('no Gemfile.lock: gems are resolved afresh on every build');
  // Locked gems are indented four spaces under GEM/specs; without a lock, the Gemfile's own lines.
  const gem = (name: string) =>
    new RegExp(lock !== null ? `^ {4}${name} \\(` : `^\\s*gem\\s+["']${name}["']`, 'm').test(lock ?? gemfile);
  const version = await rubyVersion(files, gemfile, lock, o, from, warnings);
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : PORT;

  const rails = gem('rails') || gem('railties');
  let argv: string[];
  let build: string | null = o?.build !== undefined ? command('(override)', 'build', o.build) : null;
  if (o?.start !== undefined) argv = startArgv('(override)', 'start', o.start);
  else if (rails && (await files.exists('bin/rails'))) {
    from.push('bin/rails');
    argv = ['bin/rails', 'server', '-b', '0.0.0.0', '-p', String(p)];
    warnings.push('Rails needs SECRET_KEY_BASE (or RAILS_MASTER_KEY) in the app environment');
    if (build === null && (gem('sprockets-rails') || gem('propshaft')))
      build = 'SECRET_KEY_BASE_DUMMY=1 bundle exec rails assets:precompile';
    if (gem('jsbundling-rails') || gem('cssbundling-rails'))
      warnings.push('jsbundling/cssbundling need node at build time; the generated image has none');
  } else if (await files.exists('config.ru')) {
    from.push('config.ru');
    if (gem('puma')) argv = ['bundle', 'exec', 'puma', '--bind', `tcp://0.0.0.0:${p}`, 'config.ru'];
    else {
      argv = ['bundle', 'exec', 'rackup', '--host', '0.0.0.0', '--port', String(p)];
      warnings.push('a Rack app without puma: served by rackup; add puma to the Gemfile');
    }
  } else if (await files.exists('app.rb')) {
    from.push('app.rb');
    argv = ['bundle', 'exec', 'ruby', 'app.rb', '-o', '0.0.0.0', '-p', String(p)];
  } else return 'Gemfile found, but no bin/rails, config.ru or app.rb to start; give a start command';

  const install = o?.install !== undefined ? command('(override)', 'install', o.install) : 'bundle install';
  // Deployment mode insists on a lock file.
  const { BUNDLE_DEPLOYMENT, ...unlocked } = BUNDLE_ENV;
  const bundleEnv: Record<string, string | number> =
    lock !== null ? { BUNDLE_DEPLOYMENT, ...unlocked } : unlocked;
  const appEnv: Record<string, string | number> = rails ? RAILS_ENV : { RACK_ENV: 'production' };
  const image = `ruby:${version}-slim-bookworm`;

  const df = new Dockerfile();
  df.from(`ruby:${version}-bookworm`, 'build')
    .env({ ...bundleEnv, ...appEnv })
    .workdir('/app');
  const manifests = ['Gemfile', ...(lock !== null ? ['Gemfile.lock'] : [])];
  // `ruby file: ".ruby-version"` in a Gemfile reads it during the install.
  if (await files.exists('.ruby-version')) manifests.push('.ruby-version');
  df.copy(manifests, './');
  df.runStep(install, o?.install !== undefined);
  df.copy(['.'], '.');
  if (build !== null) df.runStep(build, o?.build !== undefined);
  df.from(image);
  const libs = RUNTIME_LIBS.filter(([g]) => gem(g)).map(([, pkg]) => pkg);
  if (libs.length) aptInstall(df, libs);
  addAppUser(df);
  df.env({ ...bundleEnv, ...appEnv, PORT: p }).workdir('/app');
  df.copy(['/usr/local/bundle'], '/usr/local/bundle', { from: 'build' });
  df.copy(['/app'], '/app', { from: 'build', chown: `${APP_USER}:${APP_USER}` });
  df.user(APP_USER).expose(p).cmd(argv);
  const runtime = { name: 'ruby', version, image };
  return planOf(df, {
    stack: 'ruby',
    detected_from: from,
    runtime,
    install,
    build,
    start: showArgv(argv),
    port: p,
    warnings,
  });
}
