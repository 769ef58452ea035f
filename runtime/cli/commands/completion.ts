// `svc completion bash|zsh`: a completion script generated from the command table (command
// words, then each command's options), so it never disagrees with the parser.
import { command, UsageError, type Command } from '../parser.js';

const SHELLS = ['bash', 'zsh'] as const;

function bashScript(commands: readonly Command[]): string {
  const firsts = [...new Set(commands.map((c) => c.name.split(' ')[0]!))];
  const groups = firsts
    .map(
      (f) =>
        [f, commands.filter((c) => c.name.startsWith(`${f} `)).map((c) => c.name.split(' ')[1]!)] as const,
    )
    .filter(([, subs]) => subs.length);
  const options = commands.map(
    (c) => [c.name, [...Object.keys(c.options ?? {}).map((o) => `--${o}`), '--help'].join(' ')] as const,
  );
  return [
    '# svc completion (bash): eval "$(svc completion bash)"',
    '_svc() {',
    '  local cur=${COMP_WORDS[COMP_CWORD]} words="${COMP_WORDS[1]} ${COMP_WORDS[2]}"',
    '  if [ "$COMP_CWORD" -eq 1 ]; then',
    `    COMPREPLY=($(compgen -W "${firsts.join(' ')}" -- "$cur")); return`,
    '  fi',
    '  case "${COMP_WORDS[1]}" in',
    ...groups.map(
      ([f, subs]) =>
        `    ${f}) if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "${subs.join(' ')}" -- "$cur")); return; fi ;;`,
    ),
    '  esac',
    '  case "$words" in',
    ...options
      .filter(([n]) => n.includes(' '))
      .map(([n, o]) => `    "${n}") COMPREPLY=($(compgen -W "${o}" -- "$cur")); return ;;`),
    '  esac',
    '  case "${COMP_WORDS[1]}" in',
    ...options
      .filter(([n]) => !n.includes(' '))
      .map(([n, o]) => `    ${n}) COMPREPLY=($(compgen -W "${o}" -- "$cur")) ;;`),
    '  esac',
    '}',
    'complete -o default -F _svc svc',
  ].join('\n');
}

export const completionCommand = command({
  name: 'completion',
  summary: 'print a shell completion script for bash or zsh',
  usage: '<bash|zsh>',
  args: { min: 1, max: 1, names: 'the shell (bash or zsh)' },
  details: 'bash: eval "$(svc completion bash)" in ~/.bashrc; zsh: eval "$(svc completion zsh)" in ~/.zshrc.',
  async run({ args, io }) {
    const shell = args[0]!;
    if (!(SHELLS as readonly string[]).includes(shell))
      throw new UsageError(`unknown shell ${JSON.stringify(shell.slice(0, 32))} (bash or zsh)`);
    const { COMMANDS } = await import('../table.js');
    // zsh runs the bash function through its bash completion layer.
    if (shell === 'zsh') io.out('autoload -U +X bashcompinit && bashcompinit');
    io.out(bashScript(COMMANDS));
  },
});
