// Python: pip (requirements.txt), poetry, uv or pipenv into a virtualenv built in a full image and
// copied into the slim one; a WSGI/ASGI app served by gunicorn or uvicorn when they are dependencies.
import { showArgv, startArgv } from './command.js';
import { Dockerfile, addAppUser, aptInstall, APP_USER, planOf } from './dockerfile.js';
import type { RepoFiles } from './files.js';
import { tomlString, tomlTable } from './toml.js';
import { PlanError, type Plan, type StackOverride } from './types.js';
import { command, port as checkPort, pyName, versionInput } from './validate.js';
import { reduceVersion } from './versions.js';

export const PYTHON_VERSIONS = ['3.9', '3.10', '3.11', '3.12', '3.13'] as const;
export const PYTHON_DEFAULT = '3.12';
export const PYTHON_MARKERS = ['requirements.txt', 'pyproject.toml', 'Pipfile'];
const PORT = 8000;

type Manager = 'pip' | 'poetry' | 'uv' | 'pipenv' | 'pyproject';
const TOOLS = '/opt/tools/bin';

interface Facts {
  pm: Manager;
  manifests: string[];
  /** Direct dependency declarations, to look for a server and native libraries. */
  deps: string;
  pyproject: string | null;
  from: string[];
  warnings: string[];
}

const hasDep = (deps: string, name: string) =>
  new RegExp(`(^|[^A-Za-z0-9_.-])${name}($|[^A-Za-z0-9_-])`, 'im').test(deps);

async function facts(files: RepoFiles): Promise<Facts | null> {
  const read = (f: string) => files.read(f);
  const [req, pyproject, pipfile] = [
    await read('requirements.txt'),
    await read('pyproject.toml'),
    await read('Pipfile'),
  ];
  const from: string[] = [];
  const warnings: string[] = [];
  const lock = async (f: string) => (await files.exists(f)) && from.push(f) > 0;
  let pm: Manager;
  let manifests: string[];
  if (pyproject !== null && (await files.exists('uv.lock'))) {
    [pm, manifests] = ['uv', ['pyproject.toml', 'uv.lock']];
    from.push('pyproject.toml', 'uv.lock');
  } else if (
    pyproject !== null &&
    ((await files.exists('poetry.lock')) || tomlTable(pyproject, 'tool.poetry').length > 0)
  ) {
    from.push('pyproject.toml');
    pm = 'poetry';
    manifests = ['pyproject.toml', ...((await lock('poetry.lock')) ? ['poetry.lock'] : [])];
    if (manifests.length === 1)
      warnings.push('poetry without poetry.lock: dependencies are resolved afresh on every build');
  } else if (req !== null) {
    [pm, manifests] = ['pip', ['requirements.txt']];
    from.push('requirements.txt');
  } else if (pipfile !== null) {
    from.push('Pipfile');
    pm = 'pipenv';
    manifests = ['Pipfile', ...((await lock('Pipfile.lock')) ? ['Pipfile.lock'] : [])];
    if (manifests.length === 1)
      warnings.push('Pipfile without Pipfile.lock: dependencies are locked afresh on every build');
  } else if (pyproject !== null && tomlTable(pyproject, 'project').length > 0) {
    from.push('pyproject.toml');
    [pm, manifests] = ['pyproject', []];
    warnings.push(
      'pyproject.toml without a lock file: the project is installed with its sources, so the install layer is not cached apart',
    );
  } else return null;
  return {
    pm,
    manifests,
    deps: [req, pyproject, pipfile].filter((x) => x !== null).join('\n'),
    pyproject,
    from,
    warnings,
  };
}

async function pythonVersion(files: RepoFiles, f: Facts, o: StackOverride | undefined): Promise<string> {
  let input: string | null = null;
  let source = '';
  if (o?.version !== undefined)
    [input, source] = [versionInput('(override)', 'version', o.version), '(override)'];
  const pv = input === null ? await files.read('.python-version', 1024) : null;
  if (pv !== null && pv.trim())
    [input, source] = [versionInput('.python-version', 'version', pv), '.python-version'];
  const rt = input === null ? await files.read('runtime.txt', 1024) : null;
  if (rt !== null && rt.trim())
    [input, source] = [versionInput('runtime.txt', 'version', rt).replace(/^python-/, ''), 'runtime.txt'];
  if (input === null && f.pyproject !== null) {
    const v =
      tomlString(tomlTable(f.pyproject, 'project'), 'requires-python') ??
      tomlString(tomlTable(f.pyproject, 'tool.poetry.dependencies'), 'python');
    if (v !== null)
      [input, source] = [versionInput('pyproject.toml', 'requires-python', v), 'pyproject.toml'];
  }
  if (input === null) return PYTHON_DEFAULT;
  if (source !== '(override)' && !f.from.includes(source)) f.from.push(source);
  const r = reduceVersion(input, PYTHON_VERSIONS, PYTHON_DEFAULT, {
    name: 'python',
    source,
    tilde: 'pessimistic',
  });
  if (source === '(override)' && r.fallback)
    throw new PlanError(
      source,
      'version',
      `"${input}" is not a supported python version (${PYTHON_VERSIONS.join(', ')})`,
    );
  if (r.warning) f.warnings.push(r.warning);
  return r.version;
}

const FRAMEWORK =
  /^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*[\w.]+\s*)?=\s*(?:[\w]+\.)*(Flask|FastAPI|Starlette|Quart|Sanic|Litestar|Bottle|Falcon|App)\(/m;
const ASGI = new Set(['FastAPI', 'Starlette', 'Quart', 'Sanic', 'Litestar']);

/** The app to serve: a module, its callable, and whether it speaks ASGI. */
interface App {
  module: string;
  attr: string;
  asgi: boolean;
  file: string;
}

async function findApp(files: RepoFiles, f: Facts): Promise<App | null> {
  const manage = await files.read('manage.py');
  if (manage !== null) {
    f.from.push('manage.py');
    const named = /DJANGO_SETTINGS_MODULE['"]\s*,\s*['"]([A-Za-z_][A-Za-z0-9_]*)\.settings['"]/.exec(
      manage,
    )?.[1];
    const dirs = (await files.list('')).filter((e) => e.dir).map((e) => e.name);
    const candidates = named ? [named, ...dirs] : dirs;
    for (const d of candidates) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(d) || !(await files.exists(`${d}/wsgi.py`))) continue;
      const asgi =
        hasDep(f.deps, 'uvicorn') && !hasDep(f.deps, 'gunicorn') && (await files.exists(`${d}/asgi.py`));
      return {
        module: pyName(`${d}/wsgi.py`, 'module', `${d}.${asgi ? 'asgi' : 'wsgi'}`),
        attr: 'application',
        asgi,
        file: 'manage.py',
      };
    }
  }
  for (const file of ['app.py', 'main.py', 'wsgi.py', 'asgi.py', 'server.py']) {
    const src = await files.read(file);
    if (src === null) continue;
    f.from.push(file);
    const m = FRAMEWORK.exec(src);
    const attr = m?.[1] ?? (/^application\s*=/m.test(src) ? 'application' : 'app');
    return {
      module: file.slice(0, -3),
      attr: pyName(file, 'app variable', attr),
      asgi: m ? ASGI.has(m[2]!) : file === 'asgi.py',
      file,
    };
  }
  return null;
}

function serverArgv(app: App, f: Facts, p: number): string[] {
  const target = `${app.module}:${app.attr}`;
  if (app.asgi && hasDep(f.deps, 'uvicorn'))
    return ['uvicorn', target, '--host', '0.0.0.0', '--port', String(p)];
  if (hasDep(f.deps, 'gunicorn')) {
    if (app.asgi)
      f.warnings.push('an ASGI app under gunicorn without uvicorn workers; add uvicorn to the dependencies');
    return ['gunicorn', '--bind', `0.0.0.0:${p}`, target];
  }
  if (app.file === 'manage.py') {
    f.warnings.push(
      "Django without gunicorn: running Django's development server; add gunicorn to the dependencies",
    );
    return ['python', 'manage.py', 'runserver', `0.0.0.0:${p}`];
  }
  f.warnings.push(`neither gunicorn nor uvicorn is a dependency: running ${app.file} directly`);
  return ['python', app.file];
}

const INSTALL: Record<Manager, { tool?: string; cmd: (locked: boolean) => string }> = {
  pip: { cmd: () => 'pip install -r requirements.txt' },
  poetry: { tool: 'poetry', cmd: () => `${TOOLS}/poetry install --only main --no-root --no-interaction` },
  uv: { tool: 'uv', cmd: () => `${TOOLS}/uv sync --frozen --no-dev --no-install-project` },
  pipenv: {
    tool: 'pipenv',
    cmd: (locked) =>
      `${locked ? '' : `${TOOLS}/pipenv lock && `}${TOOLS}/pipenv requirements > /tmp/requirements.txt && pip install -r /tmp/requirements.txt`,
  },
  pyproject: { cmd: () => 'pip install .' },
};

export async function planPython(
  files: RepoFiles,
  o: StackOverride | undefined,
): Promise<Plan | string | null> {
  const f = await facts(files);
  if (!f) return null;
  const version = await pythonVersion(files, f, o);
  const p = o?.port !== undefined ? checkPort('(override)', 'port', o.port) : PORT;
  let argv: string[];
  if (o?.start !== undefined) argv = startArgv('(override)', 'start', o.start);
  else {
    const app = await findApp(files, f);
    if (!app)
      return `${f.from.join(', ')} found, but no app to start (manage.py, app.py, main.py, wsgi.py, asgi.py, server.py); give a start command`;
    argv = serverArgv(app, f, p);
  }
  const install =
    o?.install !== undefined
      ? command('(override)', 'install', o.install)
      : INSTALL[f.pm].cmd(f.manifests.includes('Pipfile.lock'));
  const build = o?.build !== undefined ? command('(override)', 'build', o.build) : null;
  const image = `python:${version}-slim-bookworm`;

  const df = new Dockerfile();
  // The full image has compilers for dependencies without wheels; the slim one gets only the result.
  df.from(`python:${version}-bookworm`, 'build');
  df.env({
    PIP_NO_CACHE_DIR: 1,
    PIP_DISABLE_PIP_VERSION_CHECK: 1,
    VIRTUAL_ENV: '/opt/venv',
    UV_PROJECT_ENVIRONMENT: '/opt/venv',
    PATH: '/opt/venv/bin:$PATH',
  });
  const tool = INSTALL[f.pm].tool;
  df.run(
    `python -m venv /opt/venv${tool && o?.install === undefined ? ` && python -m venv /opt/tools && ${TOOLS}/pip install ${tool}` : ''}`,
  );
  df.workdir('/app');
  // With the manifests alone enough to install and nothing to build, the source goes straight
  // from the context into the final stage.
  const direct = f.manifests.length > 0 && build === null;
  if (f.manifests.length) {
    df.copy(f.manifests, './');
    df.runStep(install, o?.install !== undefined);
    if (!direct) df.copy(['.'], '.');
  } else {
    df.copy(['.'], '.');
    df.runStep(install, o?.install !== undefined);
  }
  if (build !== null) df.runCommand(build);

  df.from(image);
  if (hasDep(f.deps, 'psycopg2')) aptInstall(df, ['libpq5']);
  addAppUser(df);
  df.env({
    PYTHONUNBUFFERED: 1,
    PYTHONDONTWRITEBYTECODE: 1,
    VIRTUAL_ENV: '/opt/venv',
    PATH: '/opt/venv/bin:$PATH',
    PORT: p,
  });
  df.workdir('/app');
  // Settings before the copies, so a source change rebuilds only the last layers.
  df.user(APP_USER).expose(p).cmd(argv);
  df.copy(['/opt/venv'], '/opt/venv', { from: 'build' });
  if (direct) df.copy(['.'], '/app', { chown: `${APP_USER}:${APP_USER}` });
  else df.copy(['/app'], '/app', { from: 'build', chown: `${APP_USER}:${APP_USER}` });
  const runtime = { name: 'python', version, image };
  return planOf(df, {
    stack: 'python',
    detected_from: f.from,
    runtime,
    install,
    build,
    start: showArgv(argv),
    port: p,
    warnings: f.warnings,
  });
}
