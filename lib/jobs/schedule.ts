// A job's schedule: a 5-field cron expression read in an IANA time zone (croner), its due times,
// and the same in words for people.
import { Cron } from 'croner';
import { badRequest } from '../http/errors.js';

const cache = new Map<string, Cron>();
const CACHE_MAX = 1000;

/** True when `tz` names a time zone this runtime knows. */
export function isTimeZone(tz: string): boolean {
  if (!/^[A-Za-z0-9_+\-/]{1,64}$/.test(tz)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The parsed schedule; 400 naming the field when the expression or the zone is refused. */
export function parseJobSchedule(expr: string, timezone: string): Cron {
  const key = `${timezone} ${expr}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 || fields.some((f) => !/^[0-9A-Za-z*/,\-?#L]+$/.test(f)))
    throw badRequest(
      `schedule must be a 5-field cron expression (minute hour day-of-month month day-of-week), got "${expr.slice(0, 80)}"`,
      [{ field: 'schedule', message: '5 fields' }],
    );
  if (!isTimeZone(timezone))
    throw badRequest(
      `timezone "${timezone.slice(0, 64)}" is not a known time zone (e.g. UTC, Europe/Paris)`,
      [{ field: 'timezone', message: 'unknown time zone' }],
    );
  let cron: Cron;
  try {
    // UTC through an offset: croner's time zone path costs about 100 times more per step.
    cron = new Cron(fields.join(' '), {
      paused: true,
      ...(timezone === 'UTC' || timezone === 'Etc/UTC' ? { utcOffset: 0 } : { timezone }),
    });
    cron.nextRun(new Date(0));
  } catch (e) {
    throw badRequest(`schedule is not a valid cron expression: ${(e as Error).message}`.slice(0, 300), [
      { field: 'schedule', message: 'invalid' },
    ]);
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(key, cron);
  return cron;
}

/** The first due time strictly after `afterMs`, or null when the schedule has none. */
export function nextDue(expr: string, timezone: string, afterMs: number): number | null {
  const next = parseJobSchedule(expr, timezone).nextRun(new Date(afterMs));
  return next ? next.getTime() : null;
}

/**
 * The due times in (afterMs, nowMs], oldest first, at most `max` of them; `more` when the
 * walk stopped at `max` before reaching now.
 */
export function dueTimes(
  expr: string,
  timezone: string,
  afterMs: number,
  nowMs: number,
  max: number,
): { times: number[]; more: boolean } {
  const cron = parseJobSchedule(expr, timezone);
  const times: number[] = [];
  let at = new Date(afterMs);
  for (;;) {
    const next = cron.nextRun(at);
    if (!next || next.getTime() > nowMs) return { times, more: false };
    if (times.length >= max) return { times, more: true };
    times.push(next.getTime());
    at = next;
  }
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const NUMBER = /^\d+$/;
const pad = (n: string) => n.padStart(2, '0');

function named(field: string, names: string[], base: number): string {
  return field
    .split(',')
    .map((part) => {
      const [a, b] = part.split('-');
      const name = (v: string) => (NUMBER.test(v) ? (names[(Number(v) - base) % names.length] ?? v) : v);
      return b === undefined ? name(a!) : `${name(a!)} to ${name(b)}`;
    })
    .join(', ');
}

function every(field: string, unit: string): string | null {
  const m = /^\*\/(\d+)$/.exec(field);
  if (!m) return null;
  return m[1] === '1' ? `every ${unit}` : `every ${m[1]} ${unit}s`;
}

function timeOfDay(min: string, hour: string): string | null {
  if (NUMBER.test(min) && NUMBER.test(hour)) return `at ${pad(hour)}:${pad(min)}`;
  if (NUMBER.test(min) && hour.split(',').every((h) => NUMBER.test(h)))
    return `at ${hour
      .split(',')
      .map((h) => `${pad(h)}:${pad(min)}`)
      .join(', ')}`;
  return null;
}

function clock(min: string, hour: string): string {
  const at = timeOfDay(min, hour);
  if (at) return at;
  if (min === '*' && hour === '*') return 'every minute';
  const everyMin = every(min, 'minute');
  if (everyMin && hour === '*') return everyMin;
  if (NUMBER.test(min) && hour === '*') return min === '0' ? 'every hour' : `every hour at minute ${min}`;
  const everyHour = every(hour, 'hour');
  if (everyHour && NUMBER.test(min)) return `${everyHour} at minute ${min}`;
  const mins = everyMin ?? (min === '*' ? 'every minute' : `at minute ${min}`);
  return `${mins} ${hour === '*' ? 'of every hour' : `during hour ${hour}`}`;
}

/** The schedule in words ("every 5 minutes", "at 03:30 on Monday to Friday"), with its zone. */
export function describeSchedule(expr: string, timezone: string): string {
  const [min = '*', hour = '*', dom = '*', month = '*', dow = '*'] = expr.trim().split(/\s+/);
  const parts = [clock(min, hour)];
  const days: string[] = [];
  if (dom !== '*' && dom !== '?') days.push(`on day ${dom} of the month`);
  if (dow !== '*' && dow !== '?') days.push(`on ${named(dow, DAYS, 0)}`);
  if (days.length) parts.push(days.join(' or '));
  else if (timeOfDay(min, hour)) parts.push('every day');
  if (month !== '*') parts.push(`in ${named(month, MONTHS, 1)}`);
  return `${parts.join(' ')} (${timezone})`;
}
