// The Dockerfile of a build, read from the context as the engine will read it and held to the build
// policy (lib/compose/buildpolicy.ts) before anything is built; the images its stages start from
// are looked at too, since their ONBUILD triggers run in this build like its own instructions.
import { readFile, realpath, stat } from 'node:fs/promises';
import { checkDockerfile, checkTriggers } from '../compose/buildpolicy.js';
import { resolveInside } from '../util/paths.js';
import { StackError, guard, isNotFound, type Engine } from './engine.js';
import { pullImage, type PullPolicy } from './pull.js';

const MAX_DOCKERFILE = 1024 * 1024;

export interface BuildFile {
  contextDir: string;
  dockerfile: string;
  args?: Record<string, string>;
  /** The file as messages name it (relative to the repository); default: the path in the context. */
  shown?: string;
  /** A generated Dockerfile's text: checked as given, never read from the context. */
  text?: string;
  /** Progress of the base images' pulls (one line per layer and state change). */
  onPull?: (line: string) => void;
  /** `always`: pull the base images again (a `pull: true` deployment); default only when missing. */
  pullPolicy?: PullPolicy;
  signal?: AbortSignal;
}

/**
 * Throws a StackError naming each refused line (`Dockerfile:7: ADD from a URL is not allowed ...`).
 * Answers the images the stages start from (pulled by now, with their registries' credentials).
 */
export async function assertBuildAllowed(engine: Engine, b: BuildFile): Promise<string[]> {
  const shown = b.shown ?? b.dockerfile;
  const fail = (reasons: string[]): never => {
    throw new StackError(`the build is refused: ${reasons.join('; ')}`);
  };
  const text = b.text ?? (await readFromContext(b, shown, fail));
  if (Buffer.byteLength(text) > MAX_DOCKERFILE) fail([`${shown}: larger than 1 MiB`]);
  const { problems, bases } = checkDockerfile(text, b.args ?? {});
  if (problems.length) fail(problems.map((p) => `${shown}:${p.line}: ${p.message}`));
  const triggers: string[] = [];
  for (const base of bases) {
    if (base.image === null) {
      triggers.push(
        `${shown}:${base.line}: the image of this FROM cannot be worked out before the build, so its ONBUILD triggers cannot be checked`,
      );
      continue;
    }
    for (const t of checkTriggers(await onBuildTriggers(engine, base.image, base.platform, b)))
      triggers.push(`${shown}:${base.line}: base image ${base.image}: ${t}`);
  }
  if (triggers.length) fail(triggers);
  return bases.flatMap((base) => (base.image === null ? [] : [base.image]));
}

async function readFromContext(
  b: BuildFile,
  shown: string,
  fail: (reasons: string[]) => never,
): Promise<string> {
  const root = await realpath(b.contextDir);
  const path = await resolveInside(root, b.dockerfile);
  if (path === null) fail([`${shown}: resolves outside the build context`]);
  try {
    const st = await stat(path!);
    if (!st.isFile()) throw new Error('not a file');
    if (st.size > MAX_DOCKERFILE) fail([`${shown}: larger than 1 MiB`]);
  } catch (e) {
    if (e instanceof StackError) throw e;
    fail([`${shown}: no such file in the build context`]);
  }
  return readFile(path!, 'utf8');
}

/**
 * The ONBUILD triggers of an image, pulled first when absent as the build would pull it (with the
 * stored credentials of its registry), so what is inspected is the image the build then finds.
 */
async function onBuildTriggers(
  engine: Engine,
  ref: string,
  platform: string | null,
  b: Pick<BuildFile, 'onPull' | 'signal' | 'pullPolicy'>,
): Promise<string[]> {
  await pullImage(engine, ref, { platform, log: b.onPull, signal: b.signal, policy: b.pullPolicy });
  return guard(engine, async () => {
    try {
      const info = (await engine.docker.getImage(ref).inspect()) as {
        Config?: { OnBuild?: string[] | null };
      };
      return info.Config?.OnBuild ?? [];
    } catch (e) {
      if (isNotFound(e)) return [];
      throw e;
    }
  });
}
