import type { Command, OptionValues } from 'commander';
import { ApiError } from '../client/client.js';
import { ValidationError } from '../errors.js';
import type { Batch, Budget, ConcurrencyLimit, Debounce, Throttle } from '../runtime/flow.js';

/** The flow-control flags of `start` (docs/flow-control.md); the server checks the ranges, these the shapes. */
export function flowOptions(cmd: Command): Command {
  return cmd
    .option('--priority <n>', 'higher runs start first: a whole number from -100 to 100 (default 0)')
    .option(
      '--concurrency-limit <n>',
      "a code workflow's run: at most this many runs of its key at once; the rest wait their turn",
    )
    .option(
      '--concurrency-key <key>',
      "with --concurrency-limit: 'input.<field>' or a constant (default: the workflow)",
    )
    .option(
      '--throttle <limit/period>',
      "a code workflow's run: at most <limit> starts of its key per <period> ('10/1m'); the rest are delayed",
    )
    .option('--throttle-key <key>', "with --throttle: 'input.<field>' or a constant (default: the workflow)")
    .option(
      '--debounce <period>',
      "a code workflow's run: the starts of its key become one run, <period> ('3s') after the last",
    )
    .option('--debounce-key <key>', "with --debounce: 'input.<field>' or a constant (default: the workflow)")
    .option('--debounce-max-wait <duration>', "with --debounce: at most this long after the window's first start")
    .option('--debounce-mode <mode>', 'with --debounce: last (the last input, default) or all (the list of inputs)')
    .option(
      '--batch-size <n>',
      "a code workflow's run: the starts of its key become one run whose input is their list, run at <n> inputs",
    )
    .option('--batch-timeout <duration>', "with --batch-size: or this long after the batch's first start ('5s')")
    .option('--batch-key <key>', "with --batch-size: 'input.<field>' or a constant (default: the workflow)")
    .option(
      '--not-before <time>',
      "a code workflow's run: its code begins no earlier than this ISO 8601 time (or ms since 1970), " +
        'at most 1 year ahead',
    )
    .option('--budget-tokens <n>', "a code workflow's run: at most this many model tokens in all")
    .option('--budget-cost <n>', "a code workflow's run: at most this cost in all (a positive number)")
    .option('--budget-tool-calls <n>', "a code workflow's run: at most this many tool calls")
    .option('--budget-steps <n>', "a code workflow's run: at most this many steps")
    .option('--budget-wall-time <duration>', "a code workflow's run: at most this long from its start ('1h')")
    .option(
      '--budget-on-exceed <what>',
      'over a budget: fail (default) or approve (the run waits for runledger runs approve-budget)',
    );
}

/** What the flow flags give a start; each flag given replaces the workflow's own field. */
export interface FlowFlags {
  priority?: number;
  concurrency?: ConcurrencyLimit[];
  throttle?: Throttle;
  debounce?: Debounce;
  batch?: Batch;
  budget?: Budget;
  /** POST /runs `not_before`: ms since 1970, or the ISO time as given (the server reads it and checks the range). */
  notBefore?: number | string;
}

const WHOLE = /^-?\d+$/;

function whole(flag: string, value: unknown): number {
  const n = Number(value);
  if (typeof value !== 'string' || !WHOLE.test(value.trim()) || !Number.isSafeInteger(n))
    throw new ValidationError(flag, `must be a whole number (got '${String(value)}')`);
  return n;
}

function positive(flag: string, value: unknown): number {
  const n = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new ValidationError(flag, `must be a positive number (got '${String(value)}')`);
  return n;
}

/** A duration as given: whole milliseconds, or a string like '30s' the server reads. */
function duration(value: string): number | string {
  return /^\d+$/.test(value.trim()) ? Number(value) : value;
}

/** `--not-before`: whole ms, or a time `Date` reads (sent as given, for the server to check). */
function notBefore(value: string): number | string {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}/.test(trimmed) || Number.isNaN(Date.parse(trimmed)))
    throw new ValidationError('--not-before', `must be an ISO 8601 time, as in 2030-01-01T09:00:00Z (got '${value}')`);
  return trimmed;
}

/** `--with` needs `--flag`: a ValidationError naming both. */
function needs(options: OptionValues, flag: string, field: string, ...others: Array<[string, string]>): void {
  for (const [other, key] of others)
    if (options[key] !== undefined && options[field] === undefined) throw new ValidationError(other, `needs ${flag}`);
}

/** The flow flags as the start's options; a bad one is a ValidationError naming the flag. */
export function flowFlags(options: OptionValues): FlowFlags {
  needs(options, '--concurrency-limit <n>', 'concurrencyLimit', ['--concurrency-key', 'concurrencyKey']);
  needs(options, '--throttle <limit/period>', 'throttle', ['--throttle-key', 'throttleKey']);
  needs(
    options,
    '--debounce <period>',
    'debounce',
    ['--debounce-key', 'debounceKey'],
    ['--debounce-max-wait', 'debounceMaxWait'],
    ['--debounce-mode', 'debounceMode'],
  );
  needs(options, '--batch-size <n>', 'batchSize', ['--batch-timeout', 'batchTimeout'], ['--batch-key', 'batchKey']);
  const flow: FlowFlags = {};
  if (options.priority !== undefined) flow.priority = whole('--priority', options.priority);
  if (options.concurrencyLimit !== undefined)
    flow.concurrency = [
      {
        ...(options.concurrencyKey === undefined ? {} : { key: String(options.concurrencyKey) }),
        limit: whole('--concurrency-limit', options.concurrencyLimit),
      },
    ];
  if (options.throttle !== undefined) {
    const match = /^\s*([^/]+)\/(.+?)\s*$/.exec(String(options.throttle));
    if (!match)
      throw new ValidationError('--throttle', `must be <limit>/<period>, as in 10/1m (got '${options.throttle}')`);
    flow.throttle = {
      ...(options.throttleKey === undefined ? {} : { key: String(options.throttleKey) }),
      limit: whole('--throttle', match[1]),
      period: duration(match[2]!),
    };
  }
  if (options.debounce !== undefined) {
    const mode = options.debounceMode;
    if (mode !== undefined && mode !== 'last' && mode !== 'all')
      throw new ValidationError('--debounce-mode', `must be last or all (got '${mode}')`);
    flow.debounce = {
      ...(options.debounceKey === undefined ? {} : { key: String(options.debounceKey) }),
      period: duration(String(options.debounce)),
      ...(options.debounceMaxWait === undefined ? {} : { maxWait: duration(String(options.debounceMaxWait)) }),
      ...(mode === undefined ? {} : { mode }),
    };
  }
  if (options.batchSize !== undefined) {
    if (options.batchTimeout === undefined)
      throw new ValidationError('--batch-size', 'needs --batch-timeout <duration>');
    flow.batch = {
      ...(options.batchKey === undefined ? {} : { key: String(options.batchKey) }),
      maxSize: whole('--batch-size', options.batchSize),
      timeout: duration(String(options.batchTimeout)),
    };
  }
  if (options.notBefore !== undefined) flow.notBefore = notBefore(String(options.notBefore));
  const budget: Budget = {};
  if (options.budgetTokens !== undefined) budget.tokens = whole('--budget-tokens', options.budgetTokens);
  if (options.budgetCost !== undefined) budget.cost = positive('--budget-cost', options.budgetCost);
  if (options.budgetToolCalls !== undefined) budget.toolCalls = whole('--budget-tool-calls', options.budgetToolCalls);
  if (options.budgetSteps !== undefined) budget.steps = whole('--budget-steps', options.budgetSteps);
  if (options.budgetWallTime !== undefined) budget.wallTime = duration(String(options.budgetWallTime));
  if (Object.keys(budget).length > 0) {
    const onExceed = options.budgetOnExceed;
    if (onExceed !== undefined && onExceed !== 'fail' && onExceed !== 'approve')
      throw new ValidationError('--budget-on-exceed', `must be fail or approve (got '${onExceed}')`);
    flow.budget = { ...budget, ...(onExceed === undefined ? {} : { onExceed }) };
  } else if (options.budgetOnExceed !== undefined)
    throw new ValidationError('--budget-on-exceed', 'needs a cap: --budget-tokens, --budget-cost, --budget-steps, …');
  return flow;
}

/** The flag that gave a field of POST /runs (`throttle.limit` → `--throttle`, `budget.tool_calls` → its own flag). */
export function flagOf(path: string): string | undefined {
  const [head, field] = path.replace(/\[\d+\]/, '').split('.');
  if (head === 'priority') return '--priority';
  if (head === 'concurrency') return field === 'key' ? '--concurrency-key' : '--concurrency-limit';
  if (head === 'throttle') return field === 'key' ? '--throttle-key' : '--throttle';
  if (head === 'debounce')
    return field === undefined || field === 'period' ? '--debounce' : `--debounce-${field.replace(/_/g, '-')}`;
  if (head === 'batch')
    return field === 'key' ? '--batch-key' : field === 'timeout' ? '--batch-timeout' : '--batch-size';
  if (head === 'not_before') return '--not-before';
  if (head === 'budget') return `--budget-${(field ?? 'tokens').replace(/_/g, '-')}`;
  return undefined;
}

/** A 400 of POST /runs about a flow field, told as the flag that gave it; any other error as it was. */
export function asFlagError(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.status !== 400) return error;
  const problem = error.problems.find((p) => flagOf(p.path) !== undefined);
  return problem ? new ValidationError(flagOf(problem.path)!, `${problem.message} (${problem.path})`) : error;
}

/** The flags a stored workflow's execution does not take: its limits are in its definition. */
export function storedRefuses(flow: FlowFlags): void {
  if (flow.notBefore !== undefined)
    throw new ValidationError('--not-before', "a stored workflow's execution starts now (use a schedule for later)");
  const first = (
    [
      ['concurrency', '--concurrency-limit'],
      ['throttle', '--throttle'],
      ['debounce', '--debounce'],
      ['batch', '--batch-size'],
      ['budget', '--budget-…'],
    ] as const
  ).find(([field]) => flow[field] !== undefined);
  if (first)
    throw new ValidationError(
      first[1],
      `a stored workflow's ${first[0]} is in its definition (${first[0]}: { … }, keys as 'trigger.<field>')`,
    );
}
