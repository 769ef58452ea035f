#!/usr/bin/env node
// The `svc` command: every command is a declaration in runtime/cli/table.ts, run by the one parser
// of runtime/cli/parser.ts (`--help` on any command prints its usage and does nothing else; a usage
// error exits 2, a failure 1 with one line on stderr).
import { runCommand } from './cli/parser.js';
import { COMMANDS } from './cli/table.js';

const io = {
  out: (l: string) => void process.stdout.write(l + '\n'),
  err: (l: string) => void process.stderr.write(l + '\n'),
};

runCommand(COMMANDS, process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
