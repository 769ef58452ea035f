// One interface of table types; timestamps are ISO-8601 UTC strings (they sort as text).
import type { Generated } from 'kysely';

export interface UserTable {
  id: string;
  username: string;
  password_hash: string;
  totp_enabled: number;
  /** Sealed; bound to `user:<id>:totp`. */
  totp_secret: string | null;
  /** Sealed; set by totp/setup, promoted by totp/enable. */
  totp_pending: string | null;
  totp_last_step: number | null;
  created_at: string;
  updated_at: string;
}

export interface SessionTable {
  id: string;
  token_hash: string;
  user_id: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  step_up_until: string | null;
}

export interface ApiTokenTable {
  id: string;
  user_id: string;
  name: string;
  token_hash: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  step_up_until: string | null;
}

export interface RecoveryCodeTable {
  id: Generated<number>;
  user_id: string;
  code_hash: string;
  used_at: string | null;
}

export interface AuditTable {
  id: Generated<number>;
  at: string;
  actor_id: string | null;
  actor: string | null;
  via: string | null;
  action: string;
  target: string | null;
  ip: string | null;
  outcome: number;
  detail: string | null;
}

export interface SettingTable {
  key: string;
  value: string;
}

export interface Database {
  users: UserTable;
  sessions: SessionTable;
  api_tokens: ApiTokenTable;
  recovery_codes: RecoveryCodeTable;
  audit: AuditTable;
  settings: SettingTable;
}
