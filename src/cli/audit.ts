import type { Command } from 'commander';
import { Client } from '../client/client.js';
import { toMs } from '../duration.js';
import { ValidationError } from '../errors.js';
import { DEFAULT_URL, remote, urlFlags, whole } from './options.js';
import type { Output } from './output.js';

/* The API's record of GET /audit (server/routes/audit.ts). */
interface AuditRecord {
  seq: number;
  at: string;
  actor: string | null;
  issued_to: string | null;
  method: string;
  route: string;
  target: string | null;
  address: string | null;
  outcome: number;
  detail: string | null;
}

class AuditClient extends Client {
  list = (query: URLSearchParams) =>
    this.call<{ entries: AuditRecord[]; next_cursor: string | null }>('GET', `/audit?${query}`);
}

/** `--since`: an ISO 8601 time, or a duration meaning that long ago (`1h`, `7d`). */
export function sinceOf(value: string, now = Date.now()): string {
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(value.trim())) return new Date(now - toMs(value, '--since')).toISOString();
  const at = Date.parse(value);
  if (Number.isNaN(at))
    throw new ValidationError('--since', `must be an ISO 8601 time or a duration like 1h (got '${value}')`);
  return new Date(at).toISOString();
}

/**
 * `runledger audit`: the audit trail of a running server (who did what, when, from where, with which outcome), newest
 * first, with the filters of `GET /audit`.
 *
 * @example runledger audit --actor ci-deploy --outcome 403 --since 1d
 */
export function auditCommands(program: Command, out: Output): void {
  remote(program.command('audit'))
    .description('the audit trail: every privileged request (refused ones too), newest first')
    .option('--actor <key>', "only this API key's requests")
    .option('--route <path>', 'only this route, as the API document names it (/runs/{id}/cancel)')
    .option('--outcome <status>', 'only requests answered with this HTTP status (401, 403 …)')
    .option('--since <time>', 'only since this ISO 8601 time, or this long ago (1h, 7d)')
    .option('--limit <n>', 'how many (default 50, at most 500)')
    .option('--cursor <cursor>', 'continue after a page (its next cursor)')
    .action(async (options) => {
      const query = new URLSearchParams();
      if (options.actor) query.set('actor', options.actor);
      if (options.route) query.set('route', options.route);
      if (options.outcome !== undefined) query.set('outcome', String(whole('--outcome', options.outcome, 100, 599)));
      if (options.since !== undefined) query.set('since', sinceOf(String(options.since)));
      query.set('limit', String(options.limit === undefined ? 50 : whole('--limit', options.limit, 1, 500)));
      if (options.cursor) query.set('cursor', options.cursor);
      const client = new AuditClient({
        url: options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
        token: options.token ?? (process.env.RUNLEDGER_TOKEN || undefined),
      });
      const page = await client.list(query);
      if (options.json) return out.json(page);
      out.table(
        ['AT', 'ACTOR', 'REQUEST', 'TARGET', 'FROM', 'OUTCOME'],
        page.entries.map((e) => [
          e.at,
          e.actor === null ? '-' : e.issued_to ? `${e.actor} (${e.issued_to})` : e.actor,
          `${e.method} ${e.route}`,
          e.target ?? '-',
          e.address ?? '-',
          e.detail ? `${e.outcome} ${e.detail}` : String(e.outcome),
        ]),
        'no audited requests',
      );
      if (page.next_cursor) out.line(`more: runledger audit --cursor ${page.next_cursor}${urlFlags(options)}`);
    });
}
