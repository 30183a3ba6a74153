import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { BatchClient } from '../client/batches.js';
import { ValidationError } from '../errors.js';
import type { BatchRecord } from '../workflows/batches.js';
import { DEFAULT_URL, remote, urlFlags, whole } from './options.js';
import { plural, type Output } from './output.js';

/** `client(options)`'s server and token, with the batch routes. */
const batchClient = (options: { url?: string; token?: string }) =>
  new BatchClient({
    url: options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
    token: options.token ?? (process.env.RUNLEDGER_TOKEN || undefined),
  });

/** The commands for batches of executions (brief 004 §15), on a running server. */
export function batchCommands(program: Command, out: Output): void {
  const batches = program.command('batches').description('batches: one execution of a workflow per input');
  remote(batches.command('run <workflow>'))
    .description('start one execution of the workflow (id or name) per line of a JSON Lines file, all or none')
    .requiredOption('--inputs <file>', 'a JSON Lines file: one JSON object (trigger data) per line, 1 to 1000 lines')
    .option('--idempotency-key <key>', 'the same key again starts nothing and shows the first batch')
    .action(async (workflow: string, options) => {
      const inputs = readInputs(options.inputs as string);
      const key = options.idempotencyKey as string | undefined;
      const started = await batchClient(options).startBatch(workflow, {
        inputs,
        ...(key === undefined ? {} : { idempotency_key: key }),
      });
      if (options.json) return out.json(started);
      const verb = started.duplicate ? 'already started' : 'started';
      out.line(`${verb} ${started.batch_id}: ${plural(started.total, 'execution')} of ${started.workflow_id}`);
      out.line(`follow it:  runledger batches show ${started.batch_id}${urlFlags(options)}`);
    });
  remote(batches.command('show <batch>'))
    .description("a batch's status, progress and executions by status")
    .action(async (id: string, options) => {
      const batch = await batchClient(options).batch(id);
      if (options.json) return out.json(batch);
      for (const line of describe(batch)) out.line(line);
      out.line(`executions: ${batch.execution_ids.join(' ')}`);
    });
  remote(batches.command('list'))
    .description('batches, newest first')
    .option('--limit <n>', 'how many (1 to 100)', '20')
    .action(async (options) => {
      const page = await batchClient(options).batches({ limit: whole('--limit', options.limit, 1, 100) });
      if (options.json) return out.json(page);
      out.table(
        ['ID', 'WORKFLOW', 'STATUS', 'ENDED', 'CREATED'],
        page.batches.map((b) => [
          b.batch_id,
          b.workflow_id,
          b.status,
          `${b.progress.ended}/${b.progress.total}`,
          b.created_at,
        ]),
        'no batches',
      );
    });
  remote(batches.command('cancel <batch>'))
    .description('cancel every execution of the batch that has not ended')
    .option('--reason <text>', "why, shown as the batch's and each execution's cancel_reason")
    .action(async (id: string, options) => {
      const answer = await batchClient(options).cancelBatch(id, options.reason as string | undefined);
      if (options.json) return out.json(answer);
      out.line(`cancelling ${plural(answer.cancelled, 'execution')} of ${answer.batch_id}`);
    });
}

/** The inputs of a JSON Lines file: each non-blank line one JSON object; a bad line is named by its number. */
export function readInputs(file: string): Record<string, unknown>[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ValidationError('--inputs', `cannot read ${file}: ${why}`);
  }
  const inputs: Record<string, unknown>[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new ValidationError('--inputs', `${file} line ${i + 1}: not JSON: ${(error as Error).message}`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new ValidationError(
        '--inputs',
        `${file} line ${i + 1}: must be a JSON object (one execution's trigger data)`,
      );
    inputs.push(value as Record<string, unknown>);
  }
  if (inputs.length === 0) throw new ValidationError('--inputs', `${file} has no inputs: a batch takes 1 to 1000`);
  return inputs;
}

function describe(batch: BatchRecord): string[] {
  const counts = Object.entries(batch.counts)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  return [
    `${batch.batch_id} ${batch.status} (${batch.progress.ended}/${batch.progress.total} ended) of ${batch.workflow_id}`,
    `by status: ${counts}`,
    ...(batch.cancel_reason === null ? [] : [`cancelled: ${batch.cancel_reason}`]),
    `created: ${batch.created_at}`,
  ];
}
