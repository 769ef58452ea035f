// zod forms of the URL and ref checks, for request validation. Kept apart from validate.ts so
// that the deploy pipeline (which only needs the checks) does not load zod at boot.
import { z } from 'zod';
import { checkRef, checkRepoUrl, type Verdict } from './validate.js';

function refine(check: (v: string) => Verdict) {
  return (v: string, ctx: z.core.$RefinementCtx<string>) => {
    const r = check(v);
    if (!r.ok) ctx.addIssue({ code: 'custom', message: r.reason });
  };
}

export const repoUrlSchema = z.string().superRefine(refine(checkRepoUrl));
export const refSchema = z.string().superRefine(refine(checkRef));
