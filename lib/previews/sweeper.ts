// The periodic removal of expired previews, started and stopped by the runtime. The removal code
// (and the engine client under it) loads with the first tick, not at boot.
import type { Services } from '../http/handler.js';

export class PreviewSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly env: Services,
    private readonly everyMs = 5 * 60_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.everyMs);
    this.timer.unref();
  }

  /** One sweep now (the timer's tick); `now` injectable for tests. Answers the removed previews' ids. */
  tick(now = this.env.now()): Promise<string[]> {
    if (this.running) return this.running.then(() => []);
    const run = import('./ops.js')
      .then(({ sweepExpired }) => sweepExpired(this.env, now))
      .catch((e) => {
        this.env.log.warn({ err: String(e) }, 'preview sweep failed');
        return [] as string[];
      })
      .finally(() => (this.running = null));
    this.running = run;
    return run;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
