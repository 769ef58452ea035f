// Image builds through the engine API: the context is streamed as a tar of the working copy,
// honouring .dockerignore, and the build output comes back line by line.
import { lstat, readFile, readdir, readlink } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { join, posix } from 'node:path';
import type { Pack, Header } from 'tar-stream';
import type * as TarStream from 'tar-stream';
import { lazyRequire } from '../util/lazy.js';
import type { Engine } from './engine.js';
import { StackError, guard } from './engine.js';
import { assertBuildAllowed } from './dockerfile.js';
import { LABEL_APP, LABEL_MANAGED, LABEL_SERVICE, LABEL_DEPLOYMENT } from './names.js';
import { ownerLabels } from './owner.js';

export interface BuildOptions {
  contextDir: string;
  dockerfile?: string;
  args?: Record<string, string>;
  target?: string;
  tag: string;
  labels?: Record<string, string>;
  signal?: AbortSignal;
  onLog?: (line: string) => void;
  /** The Dockerfile as messages name it (relative to the repository). */
  shown?: string;
  /** Refuse contexts larger than this (default 1 GiB). */
  maxContextBytes?: number;
  /**
   * A generated Dockerfile's text, put into the context as `dockerfile`: whatever the repository
   * holds at that path is left out, so a repository file of that name never wins. `.git` stays out.
   */
  generated?: string;
  /** The app's build limits: memory (no swap beyond it) and CPUs for every step, and a deadline. */
  limits?: { memory_mb?: number; cpus?: number; timeout_s?: number };
  /** Progress of the base images' pulls. */
  onPull?: (line: string) => void;
}

/**
 * X-Registry-Config for the build: the stored logins of the registries its FROM lines name (keyed
 * as the builder looks them up), so a base image the builder pulls itself is pulled with them too.
 */
async function registryConfig(
  engine: Engine,
  bases: string[],
): Promise<Record<string, { username: string; password: string }> | null> {
  if (!engine.credentials) return null;
  const out: Record<string, { username: string; password: string }> = {};
  for (const ref of bases) {
    const login = await engine.credentials.forReference(ref);
    if (login) out[login.serverAddress] = { username: login.username, password: login.password };
  }
  return Object.keys(out).length ? out : null;
}

/** The engine's build options for the app's limits. */
function limitOptions(l: BuildOptions['limits']): Record<string, number> {
  const out: Record<string, number> = {};
  if (l?.memory_mb) out.memory = out.memswap = l.memory_mb * 1024 * 1024;
  if (l?.cpus) Object.assign(out, { cpuperiod: 100_000, cpuquota: Math.round(l.cpus * 100_000) });
  return out;
}

/** Builds an image; resolves with its id, rejects with the builder's error message or the build policy's refusal. */
export async function buildImage(engine: Engine, opts: BuildOptions): Promise<{ imageId: string }> {
  const dockerfile = opts.dockerfile ?? 'Dockerfile';
  const bases = await assertBuildAllowed(engine, {
    contextDir: opts.contextDir,
    dockerfile,
    args: opts.args,
    shown: opts.shown,
    text: opts.generated,
    onPull: opts.onPull,
    signal: opts.signal,
  });
  const registryconfig = await registryConfig(engine, bases);
  const pack = await packContext(
    opts.contextDir,
    dockerfile,
    opts.maxContextBytes ?? 1024 ** 3,
    opts.generated,
  );
  const log = opts.onLog ?? (() => {});
  const limits = opts.limits;
  // The deadline aborts the request; the engine then stops the step that runs and removes its container.
  const deadline = limits?.timeout_s ? AbortSignal.timeout(limits.timeout_s * 1000) : null;
  const signal = deadline ? AbortSignal.any([deadline, ...(opts.signal ? [opts.signal] : [])]) : opts.signal;
  const overTime = () => {
    opts.signal?.throwIfAborted();
    if (deadline?.aborted)
      throw new StackError(
        `build stopped: it ran past its time limit of ${limits!.timeout_s} s (build_limits.timeout_s)`,
      );
  };
  return guard(engine, async () => {
    const stream = await engine.docker
      .buildImage(
        pack as unknown as NodeJS.ReadableStream,
        {
          t: opts.tag,
          dockerfile,
          buildargs: opts.args ?? {},
          ...(opts.target ? { target: opts.target } : {}),
          // Owned by this instance whatever the caller passed: the image is found again by these.
          labels: { ...opts.labels, ...ownerLabels(engine) },
          rm: true,
          forcerm: true,
          ...(registryconfig ? { registryconfig } : {}),
          ...limitOptions(limits),
          abortSignal: signal,
        } as Parameters<typeof engine.docker.buildImage>[1],
      )
      .catch((e) => {
        overTime();
        throw e;
      });
    let imageId = '';
    let failure: string | undefined;
    let buf = '';
    let partial = '';
    const handle = (line: string) => {
      if (!line.trim()) return;
      let msg: { stream?: string; error?: string; status?: string; aux?: { ID?: string } };
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.error) failure = msg.error;
      if (msg.aux?.ID) imageId = msg.aux.ID;
      const text = msg.stream ?? msg.status ?? msg.error;
      if (text) {
        // Build output arrives in arbitrary pieces; emit whole lines only.
        partial += text;
        const lines = partial.split(/\r?\n/);
        partial = lines.pop() ?? '';
        for (const l of lines) if (l.trim()) log(l);
      }
    };
    try {
      for await (const chunk of stream) {
        buf += chunk.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          handle(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      }
    } catch (e) {
      overTime();
      throw e;
    }
    handle(buf);
    if (partial.trim()) log(partial);
    overTime();
    if (failure) {
      // 137: SIGKILL, which under a memory limit is the kernel's OOM killer.
      const oom = limits?.memory_mb && /code: 137\b|exit code 137\b|signal: killed/i.test(failure);
      const why = oom
        ? `; killed: the step used more than the build's memory limit of ${limits!.memory_mb} MiB (build_limits.memory_mb)`
        : '';
      throw new StackError(`build failed: ${failure.trim()}${why}`);
    }
    if (!imageId) imageId = (await engine.docker.getImage(opts.tag).inspect()).Id;
    return { imageId };
  });
}

export function buildLabels(app: string, service: string, deploymentId: string): Record<string, string> {
  return {
    [LABEL_MANAGED]: 'true',
    [LABEL_APP]: app,
    [LABEL_SERVICE]: service,
    [LABEL_DEPLOYMENT]: deploymentId,
  };
}

type IgnoreFactory = typeof import('@balena/dockerignore').default;
// The package is CommonJS with a default-export typing; at runtime the factory is module.exports.
const dockerignore = lazyRequire<IgnoreFactory | { default: IgnoreFactory }>('@balena/dockerignore');
const ignore: IgnoreFactory = (...args) => {
  const m = dockerignore();
  return ('default' in m ? m.default : m)(...args);
};
const tar = lazyRequire<typeof TarStream>('tar-stream');

async function packContext(
  dir: string,
  dockerfile: string,
  maxBytes: number,
  generated?: string,
): Promise<Pack> {
  let rules: string[] = [];
  try {
    rules = (await readFile(join(dir, '.dockerignore'), 'utf8')).split(/\r?\n/);
  } catch {
    /* no .dockerignore */
  }
  const ig = ignore().add(rules);
  const keep = new Set([posix.normalize(dockerfile), '.dockerignore']);
  // A later "!pattern" may re-include something inside an ignored folder: keep walking then.
  const reincludes = rules.some((l) => l.trim().startsWith('!'));
  const name = posix.normalize(dockerfile);
  const ours = (rel: string) =>
    generated !== undefined &&
    (rel === name || rel.startsWith(`${name}/`) || rel === '.git' || rel.startsWith('.git/'));
  const pick = (rel: string, isDir: boolean) =>
    ours(rel) ? 'skip' : ig.ignores(rel) && !keep.has(rel) ? (isDir && reincludes ? 'walk' : 'skip') : 'take';
  return packEntries(
    dir,
    maxBytes,
    pick,
    'build context',
    generated === undefined ? undefined : { name, text: generated },
  );
}

/** A tar of a whole folder (symlinks as symlinks, owned by root): a volume's first content. */
export function packTree(dir: string, maxBytes: number): Promise<Pack> {
  return packEntries(dir, maxBytes, () => 'take', 'folder');
}

async function packEntries(
  dir: string,
  maxBytes: number,
  pick: (rel: string, isDir: boolean) => 'take' | 'walk' | 'skip',
  what: string,
  extra?: { name: string; text: string },
): Promise<Pack> {
  const entries: { rel: string; abs: string }[] = [];
  let total = 0;
  const walk = async (rel: string) => {
    for (const name of (await readdir(join(dir, rel))).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = await lstat(join(dir, r));
      const choice = pick(r, st.isDirectory());
      if (choice === 'skip') continue;
      if (choice === 'take') entries.push({ rel: r, abs: join(dir, r) });
      if (st.isFile()) {
        total += st.size;
        if (total > maxBytes) throw new StackError(`${what} is larger than ${maxBytes} bytes`);
      }
      if (st.isDirectory()) await walk(r);
    }
  };
  await walk('');
  const pack = tar().pack();
  void (async () => {
    try {
      for (const { rel, abs } of entries) {
        const st = await lstat(abs);
        const base = { name: rel, mode: st.mode & 0o7777, mtime: st.mtime, uid: 0, gid: 0 };
        if (st.isDirectory()) await entry(pack, { ...base, type: 'directory' });
        else if (st.isSymbolicLink())
          await entry(pack, { ...base, type: 'symlink', linkname: await readlink(abs) });
        else if (st.isFile()) {
          await new Promise<void>((resolve, reject) => {
            const w = pack.entry({ ...base, type: 'file', size: st.size }, (err) =>
              err ? reject(err) : resolve(),
            );
            const rs = createReadStream(abs);
            rs.on('error', reject);
            rs.pipe(w as unknown as NodeJS.WritableStream);
          });
        }
      }
      if (extra)
        await entry(
          pack,
          { name: extra.name, type: 'file', mode: 0o644, mtime: new Date(0), uid: 0, gid: 0 },
          Buffer.from(extra.text),
        );
      pack.finalize();
    } catch (e) {
      pack.destroy(e as Error);
    }
  })();
  return pack;
}

function entry(pack: Pack, header: Partial<Header> & { name: string }, body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err?: Error | null) => (err ? reject(err) : resolve());
    if (body) pack.entry(header, body, cb);
    else pack.entry(header, cb);
  });
}
