import { Cron } from 'croner';
import { ValidationError } from '../errors.js';

/**
 * The parsed cron of a schedule, or a ValidationError naming `cron` or `timezone`.
 *
 * @example parseCron('*\/2 * * * * *', 'UTC').nextRun() // a Date 0–2 s from now
 */
export function parseCron(cron: string, timezone: string): Cron {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new ValidationError('timezone', `is not an IANA time zone such as 'UTC' or 'Europe/Berlin': '${timezone}'`);
  }
  let job: Cron;
  try {
    job = new Cron(cron, { timezone, mode: '5-or-6-parts' });
  } catch (error) {
    const message = (error as Error).message.replace(/^CronPattern: /, '');
    // croner's own count ("five, six, or seven") is not what this mode accepts: say it once, ours
    const fields = cron.trim() === '' ? 0 : cron.trim().split(/\s+/).length;
    const counts = "a cron expression has 5 fields, or 6 with leading seconds ('*/2 * * * * *')";
    throw new ValidationError(
      'cron',
      /space separated parts/.test(message)
        ? `has ${fields} field${fields === 1 ? '' : 's'}: ${counts}`
        : `${message} (${counts})`,
    );
  }
  if (job.nextRun() === null) throw new ValidationError('cron', 'never fires');
  return job;
}

/** The first slot after `t` (ms), or null. */
export const slotAfter = (cron: Cron, t: number): number | null => cron.nextRun(new Date(t))?.getTime() ?? null;
/** The latest slot before `t` (ms, exclusive), or null. */
export const slotBefore = (cron: Cron, t: number): number | null =>
  cron.previousRuns(1, new Date(t))[0]?.getTime() ?? null;
