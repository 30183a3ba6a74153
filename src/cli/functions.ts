import type { Command } from 'commander';
import type { FunctionRecord } from '../client/client.js';
import { inputOption, inputValue } from './hints.js';
import { client, remote, urlFlags, whole } from './options.js';
import { plural, type Output } from './output.js';
import { serverSource } from './source.js';
import { follow } from './wait.js';

/** The commands of durable functions over HTTP (docs/protocol.md, "Durable functions"), on a running server. */
export function functionCommands(program: Command, out: Output): void {
  const functions = program
    .command('functions')
    .description('durable functions: handlers in any language behind an HTTP endpoint the engine calls');
  remote(functions.command('register <name> <url>'))
    .description('register a function endpoint, or a new version of it (new runs start on the version registered last)')
    .option('--version <version>', "this version's name (default: 1)")
    .option('--secret <secret>', 'the HMAC key the calls are signed with, 16–256 characters (default: generated once)')
    .option('--timeout <duration>', "each call's time limit, 1s to 5m (default: 30s)")
    .option('--retries <n>', "a step's attempts in all, the first included, 1 to 100 (default: 3)")
    .action(async (name: string, url: string, options) => {
      const { version, secret, timeout, retries } = options as Record<string, string | undefined>;
      const fn = await client(options).registerFunction({
        name,
        url,
        ...(version === undefined ? {} : { version }),
        ...(secret === undefined ? {} : { secret }),
        ...(timeout === undefined ? {} : { timeout: /^\d+$/.test(timeout) ? Number(timeout) : timeout }),
        ...(retries === undefined ? {} : { retries: whole('--retries', retries, 1, 100) }),
      });
      if (options.json) return out.json(fn);
      out.line(`registered ${fn.name} version ${fn.version} → ${fn.url}`);
      if (fn.secret !== undefined) out.line(`secret: ${fn.secret}  (shown once: give it to the function's SDK)`);
      out.line(`start it:  runledger functions start ${fn.name}${urlFlags(options)} --input '{}' --wait`);
    });
  remote(functions.command('list'))
    .description('the registered functions')
    .action(async (options) => {
      const { functions: all } = await client(options).functions();
      if (options.json) return out.json(all);
      out.table(
        ['NAME', 'VERSION', 'URL', 'VERSIONS', 'UPDATED'],
        all.map((f) => [f.name, f.version, f.url, String(f.versions.length), f.updated_at]),
        'no functions (runledger functions register <name> <url>)',
      );
    });
  remote(functions.command('show <name>'))
    .description('a function: the version new runs start on, every version and its URL, its timeout and retries')
    .action(async (name: string, options) => {
      const fn = await client(options).function(name);
      if (options.json) return out.json(fn);
      for (const line of describe(fn)) out.line(line);
    });
  remote(functions.command('delete <name>'))
    .description('delete a function and its versions: its runs fail at their next call')
    .action(async (name: string, options) => {
      await client(options).deleteFunction(name);
      if (options.json) return out.json({ deleted: name });
      out.line(`deleted ${name}`);
    });
  inputOption(remote(functions.command('start <name>')), 'the input, JSON (default: null)')
    .description("start a run of the function's newest version; --wait follows it until it ends")
    .option('--id <id>', 'the run id: the same id again starts nothing and answers that run')
    .option('--wait', 'follow the run until it ends (exit code 1 unless it succeeds)')
    .action(async (name: string, options) => {
      const c = client(options);
      const started = await c.startFunction(name, inputValue(options), options.id ? { id: options.id } : {});
      if (options.json && !options.wait) return out.json(started);
      if (!options.json) out.line(`run ${started.run_id} of ${started.function} version ${started.version}`);
      const followCommand = `runledger events ${started.run_id}${urlFlags(options)} --follow`;
      if (!options.wait) return options.json ? undefined : out.line(`follow it:  ${followCommand}`);
      await follow(serverSource(c), started.run_id, out, options);
    });
}

function describe(fn: FunctionRecord): string[] {
  return [
    `${fn.name}: new runs start on version ${fn.version}`,
    ...fn.versions.map((v) => `  version ${v.version}: ${v.url}${v.version === fn.version ? '  (current)' : ''}`),
    `timeout: ${fn.timeout_ms / 1000}s per call, ${plural(fn.retries, 'attempt')} per step`,
    `registered: ${fn.created_at}, updated: ${fn.updated_at}`,
  ];
}
