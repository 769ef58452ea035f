// A backup schedule (5-field cron, UTC) in words, and when it next runs. The words cover the
// schedules people write (daily, weekly, monthly, hourly, every n minutes or hours); anything else
// is shown as it is. The next run comes from croner, loaded only where a schedule is shown.

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const NUM = /^\d+$/;
const two = (n: string) => n.padStart(2, '0');

function dayName(d: string): string | null {
  if (!NUM.test(d)) return null;
  return DAYS[Number(d) % 7] ?? null;
}

/** "every day at 03:00 UTC", "every Monday at 04:30 UTC", "every 15 minutes"... */
export function describeCron(expr: string): string {
  const f = expr.trim().split(/\s+/);
  if (f.length !== 5) return `on the schedule ${expr}`;
  const [min, hour, dom, mon, dow] = f as [string, string, string, string, string];
  const at = NUM.test(min) && NUM.test(hour) ? `at ${two(hour)}:${two(min)} UTC` : null;
  const step = (x: string) => /^\*\/(\d+)$/.exec(x)?.[1];
  if (mon !== '*') return `on the schedule ${expr}`;
  if (at && dom === '*' && dow === '*') return `every day ${at}`;
  if (at && dom === '*' && dow === '1-5') return `on weekdays ${at}`;
  if (at && dom === '*' && dayName(dow)) return `every ${dayName(dow)} ${at}`;
  if (at && NUM.test(dom) && dow === '*') return `on day ${dom} of every month ${at}`;
  if (NUM.test(min) && hour === '*' && dom === '*' && dow === '*') return `every hour at minute ${min}`;
  if (NUM.test(min) && step(hour) && dom === '*' && dow === '*')
    return `every ${step(hour)} hours at minute ${min}`;
  if (step(min) && hour === '*' && dom === '*' && dow === '*') return `every ${step(min)} minutes`;
  return `on the schedule ${expr}`;
}

/** When the schedule next runs (null: never, or not a schedule croner reads). */
export async function nextRun(expr: string, from = new Date()): Promise<Date | null> {
  try {
    const { Cron } = await import('croner');
    return new Cron(expr, { timezone: 'UTC', paused: true }).nextRun(from) ?? null;
  } catch {
    return null;
  }
}
