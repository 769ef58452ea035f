// What a Dockerfile may ask of the builder, decided before the engine sees it. The engine fetches
// ADD's URLs itself, from the host's network namespace, so a repository could otherwise bake
// whatever the host serves on loopback (Caddy's admin API, cloud metadata) into its image.
import {
  parseDockerfile,
  expandWord,
  splitWords,
  UNKNOWN,
  type Instruction,
  type Lookup,
  type ParseOptions,
} from './dockerfile.js';

export interface DockerfileProblem {
  line: number;
  message: string;
}
export interface BaseImage {
  line: number;
  /** The image as the builder will ask for it (build args applied), or null when it cannot be fixed. */
  image: string | null;
  platform: string | null;
}
export interface DockerfileCheck {
  problems: DockerfileProblem[];
  /** Images from a registry that stages start from (not scratch, not an earlier stage). */
  bases: BaseImage[];
}

const KNOWN = new Set([
  'FROM',
  'RUN',
  'CMD',
  'LABEL',
  'MAINTAINER',
  'EXPOSE',
  'ENV',
  'ADD',
  'COPY',
  'ENTRYPOINT',
  'VOLUME',
  'USER',
  'WORKDIR',
  'ARG',
  'ONBUILD',
  'STOPSIGNAL',
  'HEALTHCHECK',
  'SHELL',
]);
const FLAGS: Record<string, string[]> = {
  FROM: ['platform'],
  ADD: ['chown', 'chmod', 'link', 'exclude', 'checksum', 'keep-git-dir', 'unpack'],
  COPY: ['from', 'chown', 'chmod', 'link', 'parents', 'exclude'],
  RUN: ['mount', 'network', 'security'],
  HEALTHCHECK: ['interval', 'timeout', 'start-period', 'start-interval', 'retries'],
};
/** The official frontend only: any other frontend image decides for itself what the build fetches. */
const SYNTAX = /^(docker\.io\/)?docker\/dockerfile(-upstream)?(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$/;

/**
 * Every problem of a Dockerfile, by line, and the images its stages start from. `args` are the
 * build args the product passes (they override ARG defaults). The file is read as the builder with
 * heredocs and the file's escape directive reads it, and again as a builder without heredocs and
 * with the default escape would: a line hidden in a heredoc body by one reading is an instruction
 * to the other, so it must pass both.
 */
export function checkDockerfile(text: string, args: Record<string, string> = {}): DockerfileCheck {
  const primary = parseDockerfile(text);
  const problems: DockerfileProblem[] = primary.errors.map((e) => ({
    line: e.line,
    message: `cannot be read: ${e.message}`,
  }));
  const syntax = primary.directives.syntax;
  if (syntax !== null && !SYNTAX.test(syntax)) {
    problems.push({
      line: 1,
      message: `the syntax directive "${syntax}" names a custom frontend; only docker/dockerfile is allowed (a frontend image decides what the builder fetches)`,
    });
  }
  const main = checkInstructions(primary.instructions, args, primary.directives.escape, true);
  problems.push(...main.problems);
  const readings: { opts: ParseOptions; note: string }[] = [
    { opts: { heredocs: false }, note: 'a builder without heredocs reads this line as an instruction' },
  ];
  if (primary.directives.escape !== '\\') {
    readings.push(
      { opts: { escape: '\\' }, note: 'read with the default escape character' },
      {
        opts: { escape: '\\', heredocs: false },
        note: 'read with the default escape character and without heredocs',
      },
    );
  }
  for (const r of readings) {
    for (const p of checkInstructions(
      parseDockerfile(text, r.opts).instructions,
      args,
      r.opts.escape ?? primary.directives.escape,
      false,
    ).problems) {
      if (!problems.some((q) => q.line === p.line && q.message.startsWith(p.message)))
        problems.push({ line: p.line, message: `${p.message} (${r.note})` });
    }
  }
  problems.sort((a, b) => a.line - b.line);
  return { problems, bases: main.bases };
}

/** ONBUILD triggers of a base image (instruction lines): they run in this build, so they pass the same policy. */
export function checkTriggers(triggers: string[]): string[] {
  const out: string[] = [];
  for (const t of triggers) {
    const parsed = parseDockerfile(t, { heredocs: false });
    for (const inst of parsed.instructions) {
      const problems: DockerfileProblem[] = [];
      checkInstruction(inst, unknownStage(), problems, '\\', [], true);
      out.push(...problems.map((p) => `ONBUILD ${shownWord(t.trim())}: ${p.message}`));
    }
  }
  return out;
}

interface Stage {
  name: string | null;
  /** ENV set by this Dockerfile in the stage or the stages it starts from. */
  env: Map<string, string | typeof UNKNOWN>;
  /** ARGs declared in the stage, with their values. */
  args: Map<string, string | undefined>;
  /** False when the stage starts from an image whose environment this Dockerfile cannot see. */
  baseKnown: boolean;
}

const unknownStage = (): Stage => ({ name: null, env: new Map(), args: new Map(), baseKnown: false });

function stageLookup(s: Stage): Lookup {
  // The builder looks a word's variables up in the environment (the base image's, then ENV) before
  // the ARGs: an ARG value counts only when no base image environment could shadow it.
  return (name) => {
    const e = s.env.get(name);
    if (e !== undefined) return e;
    if (!s.baseKnown) return UNKNOWN;
    return s.args.get(name);
  };
}

function checkInstructions(
  list: Instruction[],
  passed: Record<string, string>,
  esc: string,
  strict: boolean,
): { problems: DockerfileProblem[]; bases: BaseImage[] } {
  const problems: DockerfileProblem[] = [];
  const bases: BaseImage[] = [];
  const meta = new Map<string, string | undefined>();
  const stages: Stage[] = [];
  let stage: Stage | null = null;
  for (const inst of list) {
    if (inst.keyword === 'FROM') {
      const words = splitWords(inst.rest, esc);
      const platform = inst.flags.find((f) => f.name === 'platform')?.value ?? null;
      const ref = words[0] === undefined ? null : expandWord(words[0], (n) => meta.get(n), esc);
      const image = ref?.ok ? ref.value : null;
      const parent = image === null ? undefined : stages.find((s) => s.name === image.toLowerCase());
      stage = {
        name: words.length === 3 && words[1]!.toLowerCase() === 'as' ? words[2]!.toLowerCase() : null,
        env: new Map(parent?.env ?? []),
        args: new Map(),
        baseKnown: parent ? parent.baseKnown : image === 'scratch',
      };
      if (!parent && image !== 'scratch') bases.push({ line: inst.line, image, platform });
      stages.push(stage);
      for (const f of inst.flags)
        if (!FLAGS.FROM!.includes(f.name))
          problems.push({ line: inst.line, message: `unknown flag --${f.name} for FROM` });
      continue;
    }
    if (inst.keyword === 'ARG' && !stage) {
      for (const [name, def] of nameValues(inst.rest, esc, (n) => meta.get(n)))
        meta.set(name, name in passed ? passed[name] : def === UNKNOWN ? undefined : def);
      continue;
    }
    if (!KNOWN.has(inst.keyword)) {
      if (strict) problems.push({ line: inst.line, message: `unknown instruction ${inst.keyword}` });
      continue;
    }
    checkInstruction(inst, stage ?? unknownStage(), problems, esc, stages, strict, passed, meta);
  }
  return { problems, bases };
}

function checkInstruction(
  inst: Instruction,
  stage: Stage,
  problems: DockerfileProblem[],
  esc: string,
  stages: Stage[],
  strict: boolean,
  passed: Record<string, string> = {},
  meta = new Map<string, string | undefined>(),
): void {
  const refuse = (message: string) => problems.push({ line: inst.line, message });
  const allowed = FLAGS[inst.keyword];
  if (allowed)
    for (const f of inst.flags)
      if (!allowed.includes(f.name)) refuse(`unknown flag --${f.name} for ${inst.keyword}`);
  const lookup = stageLookup(stage);
  switch (inst.keyword) {
    case 'ARG':
      for (const [name, def] of nameValues(inst.rest, esc, lookup)) {
        stage.args.set(
          name,
          name in passed ? passed[name] : def === UNKNOWN ? undefined : (def ?? meta.get(name)),
        );
      }
      return;
    case 'ENV': {
      const values = nameValues(inst.rest, esc, lookup, true);
      for (const [name, v] of values) stage.env.set(name, v ?? '');
      return;
    }
    case 'ADD':
    case 'COPY':
      return checkSources(inst, lookup, esc, refuse);
    case 'RUN':
      return checkRun(inst, stages, refuse);
    case 'ONBUILD':
      // The trigger runs in whichever build starts from this stage: nothing of its variables is known.
      if (inst.sub && ['ADD', 'COPY', 'RUN', 'ONBUILD'].includes(inst.sub.keyword))
        checkInstruction(inst.sub, unknownStage(), problems, esc, [], strict);
      return;
  }
}

/** `NAME=value ...` (or ENV's legacy `NAME value`), values expanded; UNKNOWN when they cannot be. */
function nameValues(
  rest: string,
  esc: string,
  lookup: Lookup,
  legacy = false,
): [string, string | undefined | typeof UNKNOWN][] {
  const words = splitWords(rest, esc);
  const value = (w: string) => {
    const e = expandWord(w, lookup, esc);
    return e.ok ? e.value : UNKNOWN;
  };
  if (legacy && words.length && !words[0]!.includes('=')) {
    const m = /^\S+\s+(.*)$/s.exec(rest.trim());
    return [[words[0]!, m ? value(m[1]!.trim()) : '']];
  }
  return words.map((w) => {
    const eq = w.indexOf('=');
    return eq < 0 ? [w, undefined] : [w.slice(0, eq), value(w.slice(eq + 1))];
  });
}

const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
// scp-like git addresses (git@host:path), as the builder's git reference parser reads them.
const SCP_LIKE = /^[^/:]+@[^/:]+:/;

/** A source as messages show it: bounded, and without the credentials a URL may carry. */
function shownWord(w: string): string {
  const s = w.replace(/(\/\/)[^/@\s]*@/g, '$1***@');
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
}

function checkSources(inst: Instruction, lookup: Lookup, esc: string, refuse: (m: string) => void): void {
  const kw = inst.keyword;
  const words = inst.json ?? inst.rest.split(/[\t\v\f\r ]+/).filter(Boolean);
  if (words.length < 2) return;
  const from = inst.flags.find((f) => f.name === 'from');
  if (kw === 'ADD') {
    if (inst.flags.some((f) => f.name === 'checksum'))
      refuse('ADD --checksum is only used with a URL, and ADD from a URL is not allowed');
    if (inst.flags.some((f) => f.name === 'keep-git-dir'))
      refuse(
        'ADD --keep-git-dir is only used with a git repository, and ADD from a git repository is not allowed',
      );
  }
  const heredocs = new Set(inst.heredocs.map((h) => h.name));
  for (const word of words.slice(0, -1)) {
    const h = /^\d*<<-?(.*)$/s.exec(word);
    if (h && heredocs.has(h[1]!.replace(/["']/g, ''))) continue;
    const raw = shownWord(word);
    const e = expandWord(word, lookup, esc);
    if (!e.ok) {
      if (kw === 'ADD') {
        const why = e.unknown.length
          ? `depends on ${e.unknown.map((n) => `$${n}`).join(', ')}, which the build cannot fix before it runs (the base image's environment or a build arg may set it)`
          : `cannot be read (${e.error})`;
        refuse(`ADD source "${raw}" ${why}; use COPY for files of the repository`);
      }
      continue;
    }
    const src = e.value;
    if (kw === 'ADD') {
      if (/\.git(#.*)?$/.test(src) && (URL_SCHEME.test(src) || SCP_LIKE.test(src)))
        refuse(
          `ADD from a git repository is not allowed ("${raw}"): the engine would clone it from the host's own network`,
        );
      else if (URL_SCHEME.test(src) || URL_SCHEME.test(word.replace(/["'\\`]/g, ''))) {
        refuse(
          `ADD from a URL is not allowed ("${raw}"): the engine would fetch it from the host's own network, loopback included; download it in a RUN step or commit the file`,
        );
      } else if (SCP_LIKE.test(src))
        refuse(
          `ADD from a git repository is not allowed ("${raw}"): the engine would clone it from the host's own network`,
        );
    }
    if (!from && src.split('/').includes('..')) refuse(`${kw} source "${raw}" leaves the build context`);
  }
}

function checkRun(inst: Instruction, stages: Stage[], refuse: (m: string) => void): void {
  for (const f of inst.flags) {
    const v = f.value ?? '';
    if (f.name === 'network') {
      if (v === 'host')
        refuse(
          "RUN --network=host is not allowed: the step would run in the host's network, loopback included",
        );
      else if (v !== 'default' && v !== 'none')
        refuse(`RUN --network=${v} is not allowed (only default and none are)`);
    } else if (f.name === 'security') {
      if (v !== 'sandbox')
        refuse(`RUN --security=${v} is not allowed: it runs the step with the host's privileges`);
    } else if (f.name === 'mount') checkMount(v, stages, refuse);
  }
}

function checkMount(spec: string, stages: Stage[], refuse: (m: string) => void): void {
  if (spec.includes('$'))
    return void refuse(`RUN --mount=${spec} uses a variable, so it cannot be checked before the build`);
  const opts = new Map<string, string>();
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=');
    opts.set(
      (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase(),
      eq < 0
        ? ''
        : part
            .slice(eq + 1)
            .trim()
            .replace(/^"(.*)"$/s, '$1'),
    );
  }
  const type = opts.get('type') ?? 'bind';
  if (type === 'ssh')
    return void refuse(
      'RUN --mount=type=ssh is not allowed: it hands the step the SSH agent of the host that runs the build',
    );
  if (type === 'secret')
    return void refuse(
      'RUN --mount=type=secret is not allowed: secrets come from the host that runs the build',
    );
  if (!['bind', 'cache', 'tmpfs'].includes(type))
    return void refuse(`RUN --mount type "${type}" is not allowed (only bind, cache and tmpfs are)`);
  const from = opts.get('from');
  if (from !== undefined) {
    const stage = /^\d+$/.test(from)
      ? Number(from) < stages.length - 1
      : stages.slice(0, -1).some((s) => s.name === from.toLowerCase());
    if (!stage)
      refuse(
        `RUN --mount from=${from} is not allowed: only an earlier stage of this Dockerfile may be mounted (another name can reach a build context of the host)`,
      );
  } else {
    const src = opts.get('source') ?? opts.get('src') ?? '';
    if (src.split('/').includes('..')) refuse(`RUN --mount source "${src}" leaves the build context`);
  }
}
