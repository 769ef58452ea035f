// PHP: composer installs in the composer image; the app runs on the official php-fpm image with Caddy
// in front (FastCGI on loopback only). The contract asks for PHP-FPM behind a web server; Caddy is a
// single static binary already used at the edge, whereas the apache variant would be mod_php, not FPM.
import { CADDY_ENV, CADDY_IMAGE, caddyfile, writeCaddyfile } from './caddy.js';
import { showArgv, startArgv } from './command.js';
import { Dockerfile, planOf } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { command, port as checkPort, versionInput } from './validate.js';
import { reduceVersion } from './versions.js';

export const PHP_VERSIONS = ['8.1', '8.2', '8.3', '8.4'] as const;
export const PHP_DEFAULT = '8.3';
const PORT = 8080;
/** Extensions the official image is built with; any other `ext-*` needs its own Dockerfile. */
const BUILTIN = new Set([
  ...[
    'ctype',
    'curl',
    'date',
    'dom',
    'fileinfo',
    'filter',
    'ftp',
    'hash',
    'iconv',
    'json',
    'libxml',
    'mbstring',
    'mysqlnd',
    'openssl',
  ],
  ...[
    'pcre',
    'pdo',
    'pdo_sqlite',
    'phar',
    'posix',
    'random',
    'readline',
    'reflection',
    'session',
    'simplexml',
    'sodium',
    'spl',
  ],
  ...['sqlite3', 'standard', 'tokenizer', 'xml', 'xmlreader', 'xmlwriter', 'zlib'],
]);

// Both processes in one container: if either exits, the other is stopped and the container ends,
// so the restart policy sees the failure; a stop signal reaches both.
const SUPERVISE = [
  'php-fpm -F & fpm=$!',
  '/usr/local/bin/caddy run --config /etc/caddy/Caddyfile --adapter caddyfile & web=$!',
  "trap 'kill -TERM $fpm $web 2>/dev/null' TERM INT",
  'wait -n',
  'code=$?',
  'kill -TERM $fpm $web 2>/dev/null',
  'wait',
  'exit $code',
].join('; ');

export async function planPhp(files: RepoFiles, o: StackOverride | undefined): Promise<Plan | string | null> {
  const raw = await files.read('composer.json');
  if (raw === null) return null;
  const from = ['composer.json'];
  const warnings: string[] = [];
  let require: Record<string, unknown> = {};
  try {
    const j = JSON.parse(raw) as { require?: unknown };
    if (j.require && typeof j.require === 'object' && !Array.isArray(j.require))
      require = j.require as Record<string, unknown>;
  } catch {
    throw new PlanError('composer.json', 'file', 'is not valid JSON');
  }
  const lock = await files.exists('composer.lock');
  if (lock) from.push('composer.lock');
  else warnings.push('no composer.lock: dependencies are resolved afresh on every build');

  let version = PHP_DEFAULT;
  const fromRepo =
    require.php !== undefined ? versionInput('composer.json', 'require.php', require.php) : null;
  const input = o?.version !== undefined ? versionInput('(override)', 'version', o.version) : fromRepo;
  if (input !== null) {
    const source = o?.version !== undefined ? '(override)' : 'composer.json';
    const r = reduceVersion(input, PHP_VERSIONS, PHP_DEFAULT, { name: 'php', source, tilde: 'pessimistic' });
    if (source === '(override)' && r.fallback)
      throw new PlanError(
        source,
        'version',
        `"${input}" is not a supported php version (${PHP_VERSIONS.join(', ')})`,
      );
    if (r.warning) warnings.push(r.warning);
    version = r.version;
  }
  const missing = Object.keys(require)
    .filter((k) => /^ext-/.test(k) && !BUILTIN.has(k.slice(4).toLowerCase()))
    .map((k) => k.replace(/[^A-Za-z0-9_-]/g, '?'));
  if (missing.length)
    warnings.push(
      `extensions not in the php image: ${missing.join(', ')}; install them in your own Dockerfile`,
    );

  let docroot = '/app';
  if (await files.exists('public/index.php')) {
    docroot = '/app/public';
    from.push('public/index.php');
  } else if (await files.exists('index.php')) from.push('index.php');
  else if (o?.start === undefined)
    return 'composer.json found, but no public/index.php or index.php to serve; give a start command';

  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : PORT;
  const install =
    o?.install !== undefined
      ? command('(override)', 'install', o.install)
      : 'composer install --no-dev --no-interaction --no-progress --prefer-dist --no-scripts --no-autoloader --ignore-platform-reqs';
  const build =
    o?.build !== undefined
      ? command('(override)', 'build', o.build)
      : 'composer dump-autoload --no-dev --optimize --no-scripts';
  const argv = o?.start !== undefined ? startArgv('(override)', 'start', o.start) : ['bash', '-c', SUPERVISE];
  const image = `php:${version}-fpm-bookworm`;
  // A docroot at the repository root would otherwise serve vendor/, composer files and dotfiles.
  const hidden = docroot === '/app' ? '/.* /*/.* /vendor/* /composer.json /composer.lock' : '/.* /*/.*';
  const hide = [`@hidden path ${hidden}`, 'respond @hidden 404'];
  const site = [`root * ${docroot}`, 'encode gzip', ...hide, 'php_fastcgi 127.0.0.1:9000', 'file_server'];

  const df = new Dockerfile();
  df.from('composer:2', 'vendor').workdir('/app');
  df.copy(lock ? ['composer.json', 'composer.lock'] : ['composer.json'], './');
  df.runStep(install, o?.install !== undefined);
  df.copy(['.'], '.');
  df.runStep(build, o?.build !== undefined);
  // A plain copy of the binary drops the file capability that exec would refuse under dropped caps.
  df.from(CADDY_IMAGE, 'caddy').run('cp /usr/bin/caddy /caddy');
  df.from(image);
  df.copy(['/caddy'], '/usr/local/bin/caddy', { from: 'caddy' });
  df.run(
    `${writeCaddyfile(caddyfile(p, site))} && cp "$PHP_INI_DIR/php.ini-production" "$PHP_INI_DIR/php.ini"` +
      " && printf '%s\\n' '[www]' 'listen = 127.0.0.1:9000' > /usr/local/etc/php-fpm.d/zzz-loopback.conf",
  );
  df.workdir('/app');
  df.copy(['/app'], '/app', { from: 'vendor', chown: 'www-data:www-data' });
  df.env({ PORT: p, ...CADDY_ENV });
  df.user('www-data').expose(p).cmd(argv);
  const start = o?.start !== undefined ? showArgv(argv) : 'php-fpm behind caddy';
  return planOf(df, {
    stack: 'php',
    detected_from: from,
    runtime: { name: 'php', version, image },
    install,
    build,
    start,
    port: p,
    warnings,
  });
}
