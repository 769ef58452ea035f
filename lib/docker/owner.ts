// What makes an engine object the control plane's: this instance's id in its `svc.instance`
// label, or its id in the list adopted from before that label existed (recorded in the control
// database, see lib/instance/owner.ts). Never the absence of a label, and never svc.app alone:
// anyone with the engine's socket can put any label on anything, but not a random id they don't know.
import { randomBytes } from 'node:crypto';
import { LABEL_MANAGED } from './names.js';

export const LABEL_INSTANCE = 'svc.instance';

export type ObjectKind = 'container' | 'network' | 'volume' | 'image';

export interface Owner {
  /** Random, created once per control database. */
  readonly instanceId: string;
  /** `kind:id` (volumes by name) of the objects made before the instance label existed. */
  readonly adopted: ReadonlySet<string>;
}

/** An owner for an engine nobody else shares a database with (library tests, one-off tools). */
export function freshOwner(): Owner {
  return { instanceId: randomBytes(12).toString('hex'), adopted: new Set() };
}

/** The engine handle as far as ownership goes (engine.ts imports this module, not the other way). */
type Engine = { readonly owner: Owner };

export const adoptedKey = (kind: ObjectKind, id: string) => `${kind}:${id}`;

/** The labels every object the control plane creates carries. */
export function ownerLabels(engine: Engine): Record<string, string> {
  return { [LABEL_MANAGED]: 'true', [LABEL_INSTANCE]: engine.owner.instanceId };
}

/**
 * A label filter for an engine list query. With nothing adopted the engine itself narrows to this
 * instance; otherwise the caller's isOwned pass does (adopted objects carry no instance label).
 * Callers always apply isOwned to what comes back.
 */
export function ownedFilter(engine: Engine, labels: string[] = []): { label: string[] } {
  return {
    label: engine.owner.adopted.size
      ? [...labels]
      : [...labels, `${LABEL_INSTANCE}=${engine.owner.instanceId}`],
  };
}

export function isOwned(
  engine: Engine,
  kind: ObjectKind,
  id: string,
  labels: Record<string, string> | null | undefined,
): boolean {
  const mark = labels?.[LABEL_INSTANCE];
  if (mark !== undefined) return mark === engine.owner.instanceId;
  return engine.owner.adopted.has(adoptedKey(kind, id));
}
