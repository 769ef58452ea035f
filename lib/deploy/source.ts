// An app's inline compose source as a deployment spec; the file's checks are in
// lib/compose/inline.ts, which the app's schemas use at save time.
import { INLINE_COMPOSE_PATH } from '../compose/inline.js';
import type { DeploySpec } from '../apps/deployment.js';

export function inlineSpec(source: { type: 'compose'; compose: string }): DeploySpec {
  return { kind: 'compose', path: INLINE_COMPOSE_PATH, text: source.compose };
}
