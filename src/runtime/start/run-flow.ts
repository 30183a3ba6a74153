import { checkFlow, resolveKey } from '../flow-check.js';
import type { ConcurrencyLimit, FlowOptions } from '../flow.js';
import type { Workflow } from '../workflow.js';
import type { StartOptions } from './start.js';

/** A concurrency limit as a run holds it: `slot` is the key it is counted under (`checkout:42`, or `openai`). */
export interface HeldLimit extends ConcurrencyLimit {
  slot: string;
  /** The run's group among those waiting for the slot (the `fairBy` expression resolved), if the limit names one. */
  group?: string;
}

/** The flow options a run started with, as `run.started` records them (`flow`): checked, its limits' keys resolved. */
export interface RunFlow extends Omit<FlowOptions, 'concurrency'> {
  concurrency?: HeldLimit[];
}

const FIELDS = ['concurrency', 'priority', 'throttle', 'debounce', 'budget'] as const;

/**
 * The run's flow: its workflow's options with the start's own on top (each field given replaces the workflow's),
 * checked, and each concurrency limit's key resolved over the input: scope `'workflow'` (the default) counts it per
 * workflow name (`checkout:42`), `'global'` as it is (`openai`); no key is one key for the workflow. A run whose
 * input lacks a key's field is refused (ValidationError naming `concurrency[i].key`).
 *
 * @example runFlow(wf, { user: 42 }, { concurrency: [{ key: 'input.user', limit: 1 }] }).concurrency[0].slot // 'wf:42'
 */
export function runFlow(wf: Workflow, input: unknown, options: StartOptions): RunFlow {
  const merged: FlowOptions = { ...wf.flow };
  for (const field of FIELDS) if (options[field] !== undefined) Object.assign(merged, { [field]: options[field] });
  const checked = checkFlow(merged);
  const { concurrency, ...rest } = checked;
  if (!concurrency) return rest;
  return {
    ...rest,
    concurrency: concurrency.map((c, i) => {
      const key = c.key === undefined ? null : resolveKey(c.key, input, `concurrency[${i}].key`);
      const slot = c.scope === 'global' ? (key ?? wf.name) : key === null ? wf.name : `${wf.name}:${key}`;
      const group = c.fairBy === undefined ? undefined : resolveKey(c.fairBy, input, `concurrency[${i}].fairBy`);
      return { ...c, slot, ...(group === undefined ? {} : { group }) };
    }),
  };
}

/** The flow a run's first event recorded (none for runs started before flow control). */
export function flowOf(data: unknown): RunFlow | null {
  return ((data as { flow?: RunFlow } | null)?.flow as RunFlow | undefined) ?? null;
}
