// `svc operators list|reset|disable-totp`: break-glass on the host (runtime/operators-cli.ts).
import { command } from '../parser.js';
import { config } from '../host.js';

const USERNAME = { min: 1, max: 1, names: 'the username' };

export const operatorsListCommand = command({
  name: 'operators list',
  summary: 'every operator: role, apps, disabled, TOTP, last sign-in',
  usage: '[--json]',
  options: { json: { type: 'boolean', description: 'print JSON instead of a table' } },
  async run({ values, io }) {
    const { listOperators, withServiceDb } = await import('../../operators-cli.js');
    return withServiceDb(config(), io, (ctx) => listOperators(ctx, values.json === true));
  },
});

export const operatorsResetCommand = command({
  name: 'operators reset',
  summary: 'print a single-use link that sets a new password and turns TOTP off',
  usage: '<username>',
  args: USERNAME,
  async run({ args, io }) {
    const { resetOperator, withServiceDb } = await import('../../operators-cli.js');
    return withServiceDb(config(), io, (ctx) => resetOperator(ctx, args[0]!));
  },
});

export const operatorsDisableTotpCommand = command({
  name: 'operators disable-totp',
  summary: "turn off an operator's second factor and recovery codes; end their sessions",
  usage: '<username>',
  args: USERNAME,
  async run({ args, io }) {
    const { disableTotp, withServiceDb } = await import('../../operators-cli.js');
    return withServiceDb(config(), io, (ctx) => disableTotp(ctx, args[0]!));
  },
});
