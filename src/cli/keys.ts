import type { Command } from 'commander';
import type { Client } from '../client/client.js';
import type { KeyRecord, KeyRole, KeyWithSecret } from '../client/keys.js';
import { NotFoundError } from '../errors.js';
import { client, remote } from './options.js';
import type { Output } from './output.js';

/** The commands of API keys (docs/security.md) on a running server; each needs an admin key (or RUNLEDGER_TOKEN). */
export function keyCommands(program: Command, out: Output): void {
  const keys = program.command('keys').description('API keys with roles: create, list, rotate, revoke (admin)');
  remote(keys.command('create <name>'))
    .description('create a key; its secret is printed once, never again')
    .requiredOption(
      '--role <role...>',
      'admin, developer, operator, approver, viewer or worker (repeat or list several: --role operator approver)',
    )
    .option('--issued-to <person>', 'who holds the key (recorded with what it does)')
    .option('--namespace <namespace>', "one namespace, or '*' for all (default: default)")
    .action(async (name: string, options) => {
      const { role, issuedTo, namespace } = options as { role: string[]; issuedTo?: string; namespace?: string };
      const made = await client(options).createKey({
        name,
        roles: role.flatMap((r) => r.split(',')).filter((r) => r !== '') as KeyRole[],
        ...(issuedTo === undefined ? {} : { issued_to: issuedTo }),
        ...(namespace === undefined ? {} : { namespace }),
      });
      printSecret(out, made, options.json);
    });
  remote(keys.command('list'))
    .description('the keys, oldest first, revoked ones too (prefixes only, never a secret)')
    .action(async (options) => {
      const { keys: all } = await client(options).keys();
      if (options.json) return out.json(all);
      out.table(
        ['ID', 'NAME', 'ISSUED TO', 'PREFIX', 'ROLES', 'NAMESPACE', 'LAST USED', 'REVOKED'],
        all.map((k) => [
          k.id,
          k.name,
          k.issued_to ?? '-',
          k.prefix,
          k.roles.join(','),
          k.namespace,
          k.last_used_at ?? '-',
          k.revoked_at ?? '-',
        ]),
        'no keys (runledger keys create <name> --role admin)',
      );
    });
  remote(keys.command('rotate <key>'))
    .description('a new secret for the key (by id or name), printed once; the old one stops working')
    .action(async (key: string, options) => {
      const api = client(options);
      printSecret(out, await api.rotateKey(await idOf(api, key)), options.json);
    });
  remote(keys.command('revoke <key>'))
    .description('revoke the key (by id or name): it stops working, and stays listed as revoked')
    .action(async (key: string, options) => {
      const api = client(options);
      const revoked = await api.revokeKey(await idOf(api, key));
      if (options.json) return out.json(revoked);
      out.line(`revoked ${revoked.name} (${revoked.id})`);
    });
}

function printSecret(out: Output, key: KeyWithSecret, json: boolean | undefined): void {
  if (json) {
    out.json(key);
    return;
  }
  out.line(`${key.name} (${key.id}): ${key.roles.join(', ')}`);
  out.line(key.secret);
  out.line('this secret is shown once: keep it now (Authorization: Bearer <secret>, or --token)');
}

/** A key's id, given its id or its name. */
async function idOf(api: Client, key: string): Promise<string> {
  if (key.startsWith('key_')) return key;
  const found = (await api.keys()).keys.find((k: KeyRecord) => k.name === key);
  if (!found) throw new NotFoundError(`no key named '${key}' (runledger keys list)`);
  return found.id;
}
