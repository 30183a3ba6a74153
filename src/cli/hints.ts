import { Option, type Command, type OptionValues } from 'commander';
import { json } from './options.js';

/** One line on stderr (stdout stays what scripts parse): `hint: use runledger start`. */
export function hint(text: string): void {
  process.stderr.write(`hint: ${text}\n`);
}

/**
 * Adds `--input <json>` (the one flag name for a JSON value) and the old names as hidden aliases
 * (`--data`, `--payload`) that still work and print a hint. The default is applied by `inputValue`,
 * so that an old name given alone is not shadowed by it.
 */
export function inputOption(cmd: Command, help: string, old: string[] = []): Command {
  cmd.option('--input <json>', help);
  for (const name of old) cmd.addOption(new Option(`--${name} <json>`).hideHelp());
  return cmd;
}

/** The parsed value of `--input`, else of an old alias (with its hint), else `fallback`; a value that is not JSON is named by the flag given. */
export function inputValue(options: OptionValues, old: string[] = [], fallback?: string): unknown {
  const alias = old.find((name) => options[name] !== undefined);
  if (alias !== undefined) hint(`--${alias} is now --input`);
  if (options.input !== undefined) return json('--input', options.input);
  if (alias !== undefined) return json(`--${alias}`, options[alias]);
  return fallback === undefined ? undefined : json('--input', fallback);
}
