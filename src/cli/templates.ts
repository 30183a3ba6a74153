import type { Command } from 'commander';
import { TemplateClient } from '../client/templates.js';
import { ValidationError } from '../errors.js';
import { DEFAULT_URL, remote, urlFlags } from './options.js';
import { plural, type Output } from './output.js';

/** `runledger workflows instantiate`: added to the `workflows` command `workflowCommands` made. */
export function templateCommands(program: Command, out: Output): void {
  const workflows = program.commands.find((c) => c.name() === 'workflows');
  if (!workflows) throw new Error('templateCommands needs the workflows command (workflowCommands) first');
  remote(workflows.command('instantiate <template>'))
    .description('store a new workflow made of a template (id or name) with its parameters filled in')
    .requiredOption('--name <name>', "the new workflow's name")
    .option(
      '--param <name=value>',
      'a parameter, as its declared type (repeat it: --param a=1 --param b=x)',
      collect,
      [],
    )
    .action(async (template: string, options) => {
      const c = new TemplateClient({
        url: options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
        token: options.token ?? (process.env.RUNLEDGER_TOKEN || undefined),
      });
      const declared = (await c.workflow(template)).parameters ?? {};
      const params: Record<string, unknown> = {};
      for (const pair of options.param as string[]) {
        const at = pair.indexOf('=');
        if (at < 1) throw new ValidationError('--param', `must be name=value (got '${pair}')`);
        const name = pair.slice(0, at);
        params[name] = typed(name, pair.slice(at + 1), declared[name]?.type);
      }
      const made = await c.instantiate(template, { name: options.name as string, params });
      if (options.json) return out.json(made);
      out.line(`created ${made.id} '${made.name}' version ${made.version} (${plural(made.steps.length, 'step')})`);
      out.line(`run it:  runledger start ${made.id}${urlFlags(options)} --input '{}' --wait`);
    });
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** A `--param` value as its parameter's declared type; an undeclared parameter's stays text (the server names it). */
function typed(name: string, text: string, type: string | undefined): unknown {
  if (type === undefined || type === 'string') return text;
  if (type === 'number' || type === 'integer') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n))
      throw new ValidationError(
        '--param',
        `${name} must be ${type === 'integer' ? 'an' : 'a'} ${type} (got '${text}')`,
      );
    return n;
  }
  if (type === 'boolean') {
    if (text !== 'true' && text !== 'false')
      throw new ValidationError('--param', `${name} must be true or false (got '${text}')`);
    return text === 'true';
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ValidationError('--param', `${name} must be JSON (${type}): ${(error as Error).message}`);
  }
}
