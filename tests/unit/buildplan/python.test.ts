// Python detection: pip, poetry, uv and pipenv; the app module found and served by gunicorn or uvicorn
// when those are dependencies; otherwise the entry script.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertContract, finalStage, indexOf, lines, plan } from './fixtures.js';

const flask = 'from flask import Flask\napp = Flask(__name__)\n';

test('requirements.txt + gunicorn + a Flask app: gunicorn serves app:app from the slim image', async () => {
  const p = await plan({ 'requirements.txt': 'flask==3.0\ngunicorn==22\n', 'app.py': flask });
  assertContract(p);
  assert.equal(p.stack, 'python');
  assert.deepEqual(p.detected_from, ['requirements.txt', 'app.py']);
  assert.deepEqual(p.runtime, { name: 'python', version: '3.12', image: 'python:3.12-slim-bookworm' });
  assert.deepEqual(p.images, ['python:3.12-bookworm', 'python:3.12-slim-bookworm']);
  assert.equal(p.install, 'pip install -r requirements.txt');
  assert.equal(p.start, 'gunicorn --bind 0.0.0.0:8000 app:app');
  // Settings first, then the installed environment, then the source straight from the context: a
  // source change rebuilds the last copy only.
  assert.deepEqual(finalStage(p.dockerfile).slice(-5), [
    'USER app',
    'EXPOSE 8000',
    'CMD ["gunicorn","--bind","0.0.0.0:8000","app:app"]',
    'COPY --from=build /opt/venv /opt/venv',
    'COPY --chown=app:app . /app',
  ]);
  assert.ok(
    indexOf(p.dockerfile, /^COPY requirements\.txt \.\/$/) <
      indexOf(p.dockerfile, /^RUN pip install -r requirements\.txt$/),
  );
  assert.ok(!lines(p.dockerfile).includes('COPY . .'), 'nothing to build: the source skips the build stage');
  assert.ok(
    !finalStage(p.dockerfile).some((l) => /pip install/.test(l)),
    'nothing is compiled in the final stage',
  );
});

test('FastAPI under uvicorn, the app variable read from main.py', async () => {
  const p = await plan({
    'requirements.txt': 'fastapi\nuvicorn[standard]\n',
    'main.py': 'import fastapi\napi: fastapi.FastAPI = fastapi.FastAPI()\n',
  });
  assert.equal(p.start, 'uvicorn main:api --host 0.0.0.0 --port 8000');
  assert.deepEqual(p.warnings, []);
});

test('Django: manage.py names the project, gunicorn serves its wsgi module', async () => {
  const tree = {
    'requirements.txt': 'Django>=5\ngunicorn\npsycopg2>=2.9\n',
    'manage.py': "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'mysite.settings')\n",
    'mysite/wsgi.py': 'application = get_wsgi_application()\n',
    'mysite/settings.py': '',
    'blog/views.py': '',
  };
  const p = await plan(tree);
  assertContract(p);
  assert.equal(p.start, 'gunicorn --bind 0.0.0.0:8000 mysite.wsgi:application');
  assert.ok(
    finalStage(p.dockerfile).some((l) => /apt-get install -y --no-install-recommends libpq5/.test(l)),
    'psycopg2 links libpq at run time',
  );
  const dev = await plan({ ...tree, 'requirements.txt': 'Django>=5\n' });
  assert.equal(dev.start, 'python manage.py runserver 0.0.0.0:8000');
  assert.ok(dev.warnings.some((w) => /development server/.test(w)));
});

test('poetry: pyproject.toml + poetry.lock copied first, poetry from its own virtualenv, python from the poetry table', async () => {
  const pyproject =
    '[tool.poetry]\nname = "x"\n\n[tool.poetry.dependencies]\npython = "^3.11"\nflask = "^3"\ngunicorn = "^22"\n';
  const p = await plan({ 'pyproject.toml': pyproject, 'poetry.lock': '', 'app.py': flask });
  assertContract(p);
  assert.equal(p.runtime.version, '3.12');
  assert.deepEqual(p.detected_from, ['pyproject.toml', 'poetry.lock', 'app.py']);
  assert.ok(lines(p.dockerfile).includes('COPY pyproject.toml poetry.lock ./'));
  assert.equal(p.install, '/opt/tools/bin/poetry install --only main --no-root --no-interaction');
  assert.match(p.dockerfile, /python -m venv \/opt\/tools && \/opt\/tools\/bin\/pip install poetry/);
  assert.ok(!finalStage(p.dockerfile).some((l) => /tools/.test(l)), 'the installer stays in the build stage');
  assert.equal(p.start, 'gunicorn --bind 0.0.0.0:8000 app:app');
});

test('uv: uv.lock keys the install; requires-python picks the line', async () => {
  const pyproject =
    '[project]\nname = "x"\nrequires-python = ">=3.10,<3.12"\ndependencies = ["uvicorn", "starlette"]\n';
  const p = await plan({ 'pyproject.toml': pyproject, 'uv.lock': '', 'asgi.py': 'app = Starlette()\n' });
  assertContract(p);
  assert.equal(p.runtime.version, '3.11');
  assert.ok(lines(p.dockerfile).includes('COPY pyproject.toml uv.lock ./'));
  assert.equal(p.install, '/opt/tools/bin/uv sync --frozen --no-dev --no-install-project');
  assert.equal(p.start, 'uvicorn asgi:app --host 0.0.0.0 --port 8000');
});

test('Pipfile: pipenv exports the lock for pip', async () => {
  const p = await plan({
    Pipfile: '[packages]\ngunicorn = "*"\n',
    'Pipfile.lock': '{}',
    'wsgi.py': 'application = make()\n',
  });
  assertContract(p);
  assert.ok(lines(p.dockerfile).includes('COPY Pipfile Pipfile.lock ./'));
  assert.match(
    p.install!,
    /pipenv requirements > \/tmp\/requirements\.txt && pip install -r \/tmp\/requirements\.txt$/,
  );
  assert.equal(p.start, 'gunicorn --bind 0.0.0.0:8000 wsgi:application');
});

test('no WSGI/ASGI server among the dependencies: the entry script runs directly; .python-version picks the line', async () => {
  const p = await plan({
    'requirements.txt': 'requests\n',
    'main.py': 'print(1)\n',
    '.python-version': '3.13\n',
  });
  assert.equal(p.start, 'python main.py');
  assert.equal(p.runtime.image, 'python:3.13-slim-bookworm');
  assert.ok(p.warnings.some((w) => /running main\.py directly/.test(w)));
});

test('python files but nothing to start: not detectable, saying what was found', async () => {
  const { notDetectable } = await import('./fixtures.js');
  const r = await notDetectable({ 'requirements.txt': 'requests\n', 'lib/util.py': '' });
  assert.equal(r.code, 'not_detectable');
  assert.match(r.message, /requirements\.txt found, but no app to start/);
});
