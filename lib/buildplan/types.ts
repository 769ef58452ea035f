// The build plan's shapes: what detection answers (the contract's build-plan body), what it answers
// when nothing is recognisable, the operator's override, and the one error a hostile repository gets.

export const STACKS = ['node', 'python', 'go', 'static', 'php', 'ruby'] as const;
export type Stack = (typeof STACKS)[number];

/** `source.build` of type `stack`: what detection would choose, overridden field by field. */
export interface StackOverride {
  type: 'stack';
  stack: Stack;
  version?: string;
  install?: string;
  build?: string;
  start?: string;
  port?: number;
  publish_dir?: string;
}

export interface Plan {
  stack: Stack;
  /** Repository files the decision rests on, in the order they were read. */
  detected_from: string[];
  runtime: { name: string; version: string; image: string };
  /** Every image reference the Dockerfile names, as written (SVC_IMAGE_MAP applies later). */
  images: string[];
  install: string | null;
  build: string | null;
  start: string | null;
  port: number;
  dockerfile: string;
  warnings: string[];
}

export interface NotDetectable {
  code: 'not_detectable';
  message: string;
  /** The files and markers that were checked, so the operator knows what would have been recognised. */
  looked_for: string[];
}

export function isPlan(r: Plan | NotDetectable): r is Plan {
  return !('code' in r);
}

/**
 * A value from the repository (or an override) that cannot reach a Dockerfile: `file` names where it
 * was read ('(override)' for the operator's own input), `field` what it was.
 */
export class PlanError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${file}: ${field} ${reason}`);
    this.name = 'PlanError';
  }
}
