// The columns that hold sealed values, with the binding each was sealed under: enough to tell
// at boot whether sealed data exists and whether the master key in use can open it.
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { totpBinding } from '../auth/totp.js';
import { envBinding } from '../apps/env.js';
import { webhookBinding } from '../webhooks/store.js';
import { keyBinding } from '../keys/store.js';
import { channelBinding } from '../notify/store.js';
import { SIGNING_KEY_SETTING, SIGNING_KEY_BINDING, isSealed } from '../auth/signing.js';

interface Sample {
  what: string;
  sealed: string;
  binding: string;
}

/** One sealed value from each place that holds them (the sealed signing key first). */
async function samples(db: Db): Promise<Sample[]> {
  const out: Sample[] = [];
  const signing = await db.selectFrom('settings').select('value').where('key', '=', SIGNING_KEY_SETTING).executeTakeFirst();
  if (signing && isSealed(signing.value)) out.push({ what: 'the signing key', sealed: signing.value, binding: SIGNING_KEY_BINDING });
  const totp = await db.selectFrom('users').select(['id', 'totp_secret']).where('totp_secret', 'is not', null).executeTakeFirst();
  if (totp) out.push({ what: 'a TOTP secret', sealed: totp.totp_secret!, binding: totpBinding(totp.id) });
  const pending = await db.selectFrom('users').select(['id', 'totp_pending']).where('totp_pending', 'is not', null).executeTakeFirst();
  if (pending) out.push({ what: 'a pending TOTP secret', sealed: pending.totp_pending!, binding: totpBinding(pending.id) + ':pending' });
  const env = await db.selectFrom('app_env').select(['app_id', 'key', 'sealed']).executeTakeFirst();
  if (env) out.push({ what: 'an environment variable', sealed: env.sealed, binding: envBinding(env.app_id, env.key) });
  const hook = await db.selectFrom('app_webhooks').select(['app_id', 'secret_sealed']).executeTakeFirst();
  if (hook) out.push({ what: 'a webhook secret', sealed: hook.secret_sealed, binding: webhookBinding(hook.app_id) });
  const key = await db.selectFrom('app_ssh_keys').select(['app_id', 'private_sealed']).executeTakeFirst();
  if (key) out.push({ what: 'a deploy key', sealed: key.private_sealed, binding: keyBinding(key.app_id) });
  const channel = await db.selectFrom('notification_channels').select(['id', 'url_sealed']).executeTakeFirst();
  if (channel) out.push({ what: 'a notification channel URL', sealed: channel.url_sealed, binding: channelBinding(channel.id) });
  return out;
}

export async function hasSealedData(db: Db): Promise<boolean> {
  return (await samples(db)).length > 0;
}

/** What the sealer cannot open (empty when it opens everything sampled). */
export async function unopenableSealedData(db: Db, sealer: Sealer): Promise<string[]> {
  const failed: string[] = [];
  for (const s of await samples(db)) {
    try {
      sealer.open(s.sealed, s.binding);
    } catch {
      failed.push(s.what);
    }
  }
  return failed;
}
