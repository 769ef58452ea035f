// The registry host rules, first match wins; the generic rule takes every host the others do not.
import { parseReference } from '../../docker/reference.js';
import { dockerHub } from './dockerhub.js';
import { generic } from './generic.js';
import type { HostRule } from './types.js';

export type { HostRule };

export const HOST_RULES: readonly HostRule[] = [dockerHub, generic];

export function ruleFor(host: string): HostRule {
  const h = host.toLowerCase();
  return HOST_RULES.find((r) => r.matches(h))!;
}

/** The name a host's credentials are stored under (`docker.io` for every Docker Hub alias). */
export function canonicalHost(host: string): string {
  const h = host.toLowerCase();
  return ruleFor(h).canonical(h);
}

/** The stored-credentials name of an image reference's registry. */
export function registryOfReference(ref: string): string {
  return canonicalHost(parseReference(ref).registry);
}
