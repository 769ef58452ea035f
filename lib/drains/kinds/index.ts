// The drain kinds, one file each. A kind named here is accepted by the API, checked at save time
// and delivered by its drain; nothing else knows the list.
import { syslog } from './syslog.js';
import { otlpHttp } from './otlp-http.js';
import { httpJson } from './http-json.js';
import type { DrainKindDef } from './types.js';

export const DRAIN_KINDS = ['syslog', 'otlp_http', 'http_json'] as const;
export type DrainKind = (typeof DRAIN_KINDS)[number];

export const DRAIN_KIND_TABLE: Record<DrainKind, DrainKindDef> = {
  syslog,
  otlp_http: otlpHttp,
  http_json: httpJson,
};

export type { DrainKindDef, DrainLine, DrainSender, BatchResult, DrainTarget, LineSource } from './types.js';
