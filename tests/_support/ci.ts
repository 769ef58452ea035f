// The one answer to "must every real component be here?", used by every gate of the suite and by
// scripts/run-tests.mjs. CI systems set CI to "true", "1", "yes" or their own name; only an
// empty or unset CI, or "false", means a developer's machine.
//
// A gate never lets a test pass without running it: on a developer's machine a missing component
// is a loud skip (counted in the summary); under CI, or with the component's own SVC_REQUIRE_*
// override, it is a failure naming what is missing.
import type { TestContext } from 'node:test';

export function isCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.CI?.trim();
  return v !== undefined && v !== '' && v.toLowerCase() !== 'false';
}

/** Whether a missing component fails the run: under CI, or when `override` (SVC_REQUIRE_*) is 1. */
export function componentRequired(override?: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return isCI(env) || (override !== undefined && env[override] === '1');
}

/**
 * Reports a missing component: throws under CI (the test fails with the reason), else skips the
 * test loudly. Returns false so a gate reads `if (!(await needX(t))) return;`.
 */
export function missing(t: Pick<TestContext, 'name' | 'skip'>, problem: string, override?: string): false {
  if (componentRequired(override)) {
    throw new Error(
      `${problem}, and CI requires it (CI=${JSON.stringify(process.env.CI ?? '')}${override ? `, ${override}=${JSON.stringify(process.env[override] ?? '')}` : ''})`,
    );
  }
  console.error(`\n*** SKIPPING ${t.name}: ${problem} ***\n`);
  t.skip(problem);
  return false;
}
