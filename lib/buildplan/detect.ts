// Detection: the first stack whose markers are present and that knows how to start the app wins, in
// an order where a backend's own markers beat the package.json it may carry for its front-end assets.
import type { RepoFiles } from './files.js';
import { planGo } from './go.js';
import { planNode } from './node.js';
import { planPhp } from './php.js';
import { planPython, PYTHON_MARKERS } from './python.js';
import { planRuby } from './ruby.js';
import { planStatic, STATIC_MARKERS } from './static.js';
import { PlanError, STACKS, type NotDetectable, type Plan, type Stack, type StackOverride } from './types.js';

type Planner = (files: RepoFiles, o: StackOverride | undefined) => Promise<Plan | string | null>;

/** A `static` override over a package.json with a build is a front-end build; else plain files. */
const staticPlanner: Planner = async (files, o) => (await planNode(files, o, true)) ?? planStatic(files, o);

const NO_NODE_START = 'package.json found, but no start script, main file or build script';
const nodePlanner: Planner = async (files, o) =>
  (await planNode(files, o, false)) ?? ((await files.exists('package.json')) ? NO_NODE_START : null);

const PLANNERS: [Stack, Planner, string[]][] = [
  ['go', planGo, ['go.mod']],
  ['php', planPhp, ['composer.json']],
  ['ruby', planRuby, ['Gemfile']],
  ['python', planPython, PYTHON_MARKERS],
  ['node', nodePlanner, ['package.json']],
  ['static', planStatic, STATIC_MARKERS],
];

export const LOOKED_FOR = PLANNERS.flatMap(([, , markers]) => markers);

function notDetectable(message: string, lookedFor: string[]): NotDetectable {
  return { code: 'not_detectable', message, looked_for: lookedFor };
}

/**
 * What a deploy of these files would build. The override (`source.build` of type `stack`) picks the
 * stack and replaces what it names. Throws PlanError for a value that cannot reach a Dockerfile.
 */
export async function detect(files: RepoFiles, override?: StackOverride): Promise<Plan | NotDetectable> {
  if (override !== undefined) {
    if (override.type !== 'stack' || !STACKS.includes(override.stack))
      throw new PlanError('(override)', 'stack', `is not one of ${STACKS.join(', ')}`);
    const [, planner, markers] = PLANNERS.find(([s]) => s === override.stack)!;
    const r = await (override.stack === 'static' ? staticPlanner : planner)(files, override);
    if (r !== null && typeof r !== 'string') return r;
    return notDetectable(r ?? `stack ${override.stack}: none of ${markers.join(', ')} found`, markers);
  }
  const hints: string[] = [];
  for (const [, planner] of PLANNERS) {
    const r = await planner(files, undefined);
    if (typeof r === 'string') hints.push(r);
    else if (r !== null) return r;
  }
  const message = hints.length
    ? hints.join('; ')
    : `nothing recognisable: none of ${LOOKED_FOR.join(', ')} found`;
  return notDetectable(message, LOOKED_FOR);
}
