// The services this area adds to ctx.env (the service registry of lib/http/handler.ts): type-only,
// so that naming them ties no other area to this one.
import type { RunService } from './runner.js';
import type { JobScheduler } from './scheduler.js';

declare module '../http/handler.js' {
  interface Services {
    /** Runs in flight: jobs, one-off commands and release commands (lib/jobs/runner.ts). */
    runs: RunService;
    /** Starts jobs at their due times; set while the background work runs. */
    jobScheduler?: JobScheduler;
  }
}

export {};
