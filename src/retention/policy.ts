import { toMs } from '../duration.js';
import { ValidationError } from '../errors.js';

/** How long each kind of record is kept after it finished, in ms; a kind left out is kept forever. */
export type RetentionPolicy = Readonly<Record<string, number>>;

/** The kinds this build prunes: finished runs (code runs, executions, sessions/agent runs, with their tasks and ledger rows), other finished tasks, routed inbound events, chat messages, idle throttle, debounce and batch keys, audit trail rows. */
export const RETENTION_KINDS = ['runs', 'tasks', 'events', 'chat', 'keys', 'audit'] as const;

/**
 * `runs:30d,tasks:7d,events:14d` → `{ runs: 2592000000, … }`. An unknown kind or a bad duration is a
 * ValidationError naming `RUNLEDGER_RETENTION`; an empty or absent value keeps everything.
 *
 * @example parseRetention('runs:30d,tasks:7d').tasks // 604800000
 */
export function parseRetention(text: string | undefined, known: readonly string[] = RETENTION_KINDS): RetentionPolicy {
  const policy: Record<string, number> = {};
  for (const part of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [kind, age, extra] = part.split(':').map((p) => p.trim());
    if (!kind || !age || extra !== undefined)
      throw new ValidationError('RUNLEDGER_RETENTION', `'${part}' is not kind:age (e.g. runs:30d)`);
    if (!known.includes(kind))
      throw new ValidationError('RUNLEDGER_RETENTION', `'${kind}' is not a kind (one of ${known.join(', ')})`);
    if (kind in policy) throw new ValidationError('RUNLEDGER_RETENTION', `names '${kind}' twice`);
    policy[kind] = toMs(age, `RUNLEDGER_RETENTION.${kind}`);
  }
  return Object.freeze(policy);
}
