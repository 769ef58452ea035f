// Email over SMTP: the channel's URL is the server (smtp:// with STARTTLS, or smtps://; the
// credentials in it are sealed with it), its options the recipients.
import { badRequest } from '../../http/errors.js';
import { checkHost, OutboundRefused } from '../../net/outbound.js';
import { EMAIL, parseSmtpUrl, sendMail, SmtpError } from '../smtp.js';
import type { Message } from '../message.js';
import type { ChannelKindDef, ChannelOptions, Delivery } from './types.js';

export const MAX_RECIPIENTS = 20;

function recipients(options: ChannelOptions): string[] {
  const to = options.to ?? [];
  if (!to.length || to.length > MAX_RECIPIENTS || to.some((a) => !EMAIL.test(a)))
    throw badRequest(`An email channel needs 1 to ${MAX_RECIPIENTS} recipient addresses in "to"`, [
      { field: 'to', message: 'email addresses' },
    ]);
  return to;
}

export function mailText(m: Message): string {
  const lines = [m.text, ''];
  for (const f of m.fields)
    lines.push(f.value.includes('\n') ? `${f.name}:\n${f.value}` : `${f.name}: ${f.value}`);
  if (m.link) lines.push('', m.link);
  lines.push('', `${m.event} · ${m.at}`);
  return lines.join('\n');
}

async function send(m: Message, ctx: Parameters<ChannelKindDef['send']>[1]): Promise<Delivery> {
  try {
    const code = await sendMail(
      parseSmtpUrl(ctx.url),
      { to: recipients(ctx.options), subject: `[svc] ${m.title}`, text: mailText(m) },
      ctx.transport,
    );
    return { ok: true, status: code };
  } catch (e) {
    if (e instanceof OutboundRefused)
      return { ok: false, status: null, error: `refused: ${e.reason}`, refused: true };
    if (e instanceof SmtpError) return { ok: false, status: e.code, error: e.message };
    return { ok: false, status: null, error: (e as Error).message };
  }
}

export const email: ChannelKindDef = {
  check: async (url, options, guard) => {
    let server;
    try {
      server = parseSmtpUrl(url);
    } catch (e) {
      throw badRequest(`The email URL is refused: ${(e as Error).message}`, [
        { field: 'url', message: (e as Error).message },
      ]);
    }
    recipients(options);
    await checkHost(server.host, guard);
  },
  // Never the credentials: the server and port only.
  hint: (url) => {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  },
  send,
};
