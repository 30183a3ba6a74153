import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { NotFoundError, RunledgerError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { isAllowed, refusedReason } from '../workflows/actions/address.js';
import { checkUrl } from '../workflows/actions/http-send.js';
import { NOTIFY_EVENTS, type NotifyEvent } from './events.js';
import { checkBody } from './template.js';

const PROJECTION = 'notification';
const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;
const FILTER_NAME = /^[A-Za-z0-9_.:-]{1,200}$/;
const PAGE = 100;
const DEFAULT_WARN_AT = 0.8;

/** What `POST /notifications` takes. */
export interface NotificationInput {
  name: string;
  url: string;
  events: string[];
  /** Only events of runs of this workflow (`workflow`), of tasks of this queue (`queue`). */
  filter?: { workflow?: string; queue?: string };
  /** A JSON template (`{{event.*}}`, `{{run.*}}`); default: the event and its run as JSON. */
  body?: unknown;
  /** The share of a run's timeout after which `run.timeout_warning` is sent, in (0, 1). Default 0.8. */
  warn_at?: number;
  enabled?: boolean;
}

/** A notification as listed: never its secret. Times are ms since the epoch (database clock). */
export interface NotificationInfo {
  id: string;
  name: string;
  url: string;
  events: NotifyEvent[];
  filter: { workflow?: string; queue?: string };
  body: unknown;
  warnAt: number;
  enabled: boolean;
  createdAt: number;
}

/** A notification as a delivery needs it: with the secret its requests are signed with. */
export interface NotificationRecord extends NotificationInfo {
  secret: string;
}

/**
 * The notifications. Each change appends an audit event (`notification.created` without the secret;
 * `notification.deleted`) to stream `notification:<id>` and writes the `notification` projection row in the same
 * transaction, so every process on the database sees one list.
 *
 * @example
 * const { info, secret } = await registry.create({ name: 'ops', url: 'https://hooks.example.com/x', events: ['task.dead'] });
 */
export class NotificationRegistry {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    /** Hosts and CIDRs a webhook may reach although the SSRF rules refuse them (`RUNLEDGER_HTTP_ALLOW`). */
    private readonly allow: string[],
  ) {}

  /** Stores a new notification with a generated secret, returned once. */
  async create(input: NotificationInput): Promise<{ info: NotificationInfo; secret: string }> {
    const checked = checkInput(input, this.allow);
    return this.store.transaction(async (tx) => {
      const record: NotificationRecord = {
        id: newId('ntf'),
        ...checked,
        secret: randomBytes(32).toString('hex'),
        createdAt: await tx.now(),
      };
      const { secret, ...info } = record;
      await this.journal.append(`notification:${record.id}`, [{ type: 'notification.created', data: info }], { tx });
      await tx.projectionPut({ name: PROJECTION, key: record.id, value: record });
      return { info, secret };
    });
  }

  /** The notification with its secret, or undefined. */
  async get(id: string): Promise<NotificationRecord | undefined> {
    const value = await this.store.projectionGet({ name: PROJECTION, key: id });
    return value === undefined ? undefined : readRecord(id, value);
  }

  /** The notification as the API shows it; NotFoundError when there is none. */
  async info(id: string): Promise<NotificationInfo> {
    const record = await this.get(id);
    if (!record) throw new NotFoundError(`notification ${id} not found`);
    const { secret: _, ...info } = record;
    return info;
  }

  /** Every notification, with secrets (what the delivery side reads), oldest first. */
  async records(): Promise<NotificationRecord[]> {
    const records: NotificationRecord[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.store.projectionList({ name: PROJECTION, limit: PAGE, ...(after ? { after } : {}) });
      for (const { key, value } of page) records.push(readRecord(key, value));
      if (page.length < PAGE) return records;
      after = page[page.length - 1]!.key;
    }
  }

  /** Every notification as the API shows it, oldest first. */
  async list(): Promise<NotificationInfo[]> {
    return (await this.records()).map(({ secret: _, ...info }) => info);
  }

  /** Deletes a notification: its pending deliveries are dropped when they come up; NotFoundError when there is none. */
  async delete(id: string): Promise<void> {
    await this.store.transaction(async (tx) => {
      if ((await tx.projectionGet({ name: PROJECTION, key: id })) === undefined)
        throw new NotFoundError(`notification ${id} not found`);
      await this.journal.append(`notification:${id}`, [{ type: 'notification.deleted', data: { id } }], { tx });
      await tx.projectionDelete({ name: PROJECTION, key: id });
    });
  }
}

function checkInput(
  input: NotificationInput,
  allow: string[],
): Omit<NotificationRecord, 'id' | 'secret' | 'createdAt'> {
  if (typeof input.name !== 'string' || !NAME.test(input.name))
    throw new ValidationError('name', "must be 1–100 letters, digits, spaces, '.', '_' or '-'");
  const url = checkWebhookUrl(input.url, allow);
  if (!Array.isArray(input.events) || input.events.length === 0)
    throw new ValidationError('events', `must be a non-empty list of ${NOTIFY_EVENTS.join(', ')}`);
  input.events.forEach((event, i) => {
    if (!(NOTIFY_EVENTS as readonly unknown[]).includes(event))
      throw new ValidationError(
        `events[${i}]`,
        `unknown event type ${JSON.stringify(event)} (known: ${NOTIFY_EVENTS.join(', ')})`,
      );
  });
  const filter: NotificationInfo['filter'] = {};
  for (const [key, value] of Object.entries(input.filter ?? {})) {
    if (key !== 'workflow' && key !== 'queue')
      throw new ValidationError(`filter.${key}`, 'unknown filter (known: workflow, queue)');
    if (typeof value !== 'string' || !FILTER_NAME.test(value))
      throw new ValidationError(`filter.${key}`, 'must be a name of 1–200 letters, digits, _ . : -');
    filter[key] = value;
  }
  const warnAt = input.warn_at ?? DEFAULT_WARN_AT;
  if (typeof warnAt !== 'number' || !(warnAt > 0 && warnAt < 1))
    throw new ValidationError('warn_at', `must be a number between 0 and 1, exclusive (got ${String(warnAt)})`);
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean')
    throw new ValidationError('enabled', 'must be true or false');
  return {
    name: input.name,
    url,
    events: [...new Set(input.events)] as NotifyEvent[],
    filter,
    body: checkBody(input.body),
    warnAt,
    enabled: input.enabled ?? true,
  };
}

/**
 * The webhook's URL, or a ValidationError naming `url`: http(s), no credentials, and not a literal address (or
 * `localhost`) the SSRF rules of `http_request` refuse unless allowlisted. A host name is checked again, resolved,
 * at each delivery (a refused one dead-letters it).
 */
export function checkWebhookUrl(text: unknown, allow: string[]): string {
  let url: URL;
  try {
    url = new URL(String(text));
  } catch {
    throw new ValidationError('url', `must be an absolute http(s) URL (got ${JSON.stringify(text)})`);
  }
  try {
    checkUrl(url);
  } catch (error) {
    throw new ValidationError('url', (error as Error).message);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const address = host.toLowerCase() === 'localhost' ? '127.0.0.1' : host;
  if (isIP(address) === 0) return url.href;
  const reason = refusedReason(address);
  if (reason !== null && !isAllowed(url.hostname, address, allow))
    // the metadata service is never worth opening (as http_request says); a local or private service may be
    throw new ValidationError(
      'url',
      `${host} is ${reason}: refused by the SSRF rules${/metadata/.test(reason) ? '' : ` (allow it with RUNLEDGER_HTTP_ALLOW=${url.hostname})`}`,
    );
  return url.href;
}

function readRecord(id: string, value: unknown): NotificationRecord {
  const r = value as Partial<NotificationRecord> | null;
  if (typeof r?.secret !== 'string' || typeof r.url !== 'string' || !Array.isArray(r.events))
    throw new RunledgerError(`notification ${id}: the stored row is malformed`);
  return r as NotificationRecord;
}
