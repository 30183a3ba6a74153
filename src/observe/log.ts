import { pino, type Logger, type LevelWithSilent } from 'pino';
import { maskText } from '../mask.js';
import type { EngineEventMap, EngineEventName, EngineEvents } from './events.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * The process's logger: pino JSON lines on stdout at `RUNLEDGER_LOG_LEVEL` (default `info`), or
 * short readable lines when stdout is a terminal.
 *
 * @example const logger = createLogger(process.env.RUNLEDGER_LOG_LEVEL, process.stdout.isTTY);
 */
export function createLogger(
  level: string | undefined,
  pretty: boolean,
  out: { write(line: string): unknown } = process.stdout,
): Logger {
  const chosen = (level ?? 'info').toLowerCase();
  if (!LEVELS.includes(chosen))
    throw new Error(`RUNLEDGER_LOG_LEVEL must be one of ${LEVELS.join(', ')} (got ${level})`);
  const options = { level: chosen as LevelWithSilent, base: { pid: process.pid } };
  return pretty
    ? pino(options, { write: (line: string) => out.write(prettyLine(line)) })
    : pino(options, { write: (line: string) => out.write(line) });
}

const NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** `12:00:01.234 INFO  run:end run_id=… outcome=success`: one JSON line made readable. */
export function prettyLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, pid: _pid, hostname: _hostname, ...rest } = record;
  const at = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
  const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${at} ${(NAMES[level as number] ?? String(level)).padEnd(5)} ${String(msg ?? '')}${fields.length ? ` ${fields.join(' ')}` : ''}\n`;
}

type Level = 'debug' | 'info' | 'warn';

/**
 * Which events are logged at which level: lifecycle at info, per-claim and per-request detail at
 * debug. A poll's request is at debug while the work is pending, at info when it failed and is
 * retried (with its error class) or ended the poll.
 */
const LOGGED: { [K in EngineEventName]: Level | ((payload: EngineEventMap[K]) => Level) } = {
  'run:start': 'info',
  'run:end': 'info',
  'run:pass': 'debug',
  'run:state': 'info',
  'step:complete': 'info',
  'step:fail': 'info',
  'poll:attempt': (e) => (e.outcome === 'pending' ? 'debug' : 'info'),
  'compensation:end': (e) => (e.outcome === 'failed' ? 'warn' : 'info'),
  'flow:rate_wait': 'debug',
  'flow:debounced': 'debug',
  'flow:budget': 'info',
  'task:claim': 'debug',
  'task:complete': 'debug',
  'task:retry': 'info',
  'task:dead': 'warn',
  'lease:lost': 'warn',
  'subscription:parked': 'warn',
  'http:request': 'debug',
  'auth:throttled': 'warn',
  'store:transaction': 'debug',
  'store:batch': 'debug',
  'retention:pruned': 'info',
  'engine:error': 'warn',
};

/** Log fields named as the rest of the product names them (`run_id`, `step`, `task_id`, `trace_id`). */
function fields(payload: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload)) {
    if (key === 'error' && value instanceof Error) out.err = value;
    else out[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = value;
  }
  return out;
}

/**
 * Logs each engine event as one line at its level (see LOGGED). Every string is masked with the
 * secret values `secrets()` returns (the same masking the interpreter applies before the journal).
 * Returns the function that stops logging. Levels below the logger's cost one check per event.
 *
 * @example const stop = logEvents(engine.events, logger, () => knownSecretValues);
 */
export function logEvents(
  events: EngineEvents,
  logger: Logger,
  secrets: () => Iterable<string> = () => [],
): () => void {
  const offs = (Object.keys(LOGGED) as EngineEventName[]).map((name) =>
    events.on(name, (payload: EngineEventMap[typeof name]) => {
      const rule = LOGGED[name] as Level | ((payload: EngineEventMap[typeof name]) => Level);
      const level = typeof rule === 'function' ? rule(payload) : rule;
      if (!logger.isLevelEnabled(level)) return;
      const hidden = [...secrets()];
      const record = fields(payload as Record<string, unknown>);
      if (hidden.length > 0)
        for (const [k, v] of Object.entries(record)) if (typeof v === 'string') record[k] = maskText(v, hidden);
      logger[level](record, name);
    }),
  );
  return () => {
    for (const off of offs) off();
  };
}
