import pg from 'pg';
import type { NotifyChannel } from '../store.js';
import { parseWakeups } from '../wakeups.js';
import { connectionConfig, prepared, textArray } from './connection.js';

/** The PostgreSQL channel behind each store channel; the SQL that notifies uses the same names. */
const CHANNELS: Record<NotifyChannel, string> = { events: 'runledger_events', tasks: 'runledger_tasks' };

const RETRY_MIN_MS = 100;
// at most a second between tries: wake-ups are back within a second of the database (a try is one connect)
const RETRY_MAX_MS = 1000;

type Callback = (payload: string, version?: number) => void;

/**
 * One LISTEN connection per store, opened on the first `listen`. Notifications sent while it is
 * down are lost, so after a reconnect every callback is called once with '' (a wake-up: look for
 * work). Callers poll as well, so a lost wake-up costs latency, never correctness.
 *
 * The store's own wake-ups are handed over here (`deliver`) once their writes committed, and are
 * not taken again from the server: notifications sent by a connection of the store's pool (`own`,
 * by backend pid) are skipped. So a waiter in this process is woken a round trip sooner, and never
 * before the writer knows what it wrote.
 */
export class Listener {
  private readonly callbacks: Record<NotifyChannel, Set<Callback>> = { events: new Set(), tasks: new Set() };
  /** Backend pids of the store's pool connections. */
  readonly own = new Set<number>();
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryMs = RETRY_MIN_MS;
  private closed = false;

  constructor(private readonly url: string) {}

  /** Resolves once the connection is listening, so a commit after it is never missed. */
  async add(channel: NotifyChannel, callback: Callback): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('the store is closed');
    // Its own entry, so the same function listening twice is unsubscribed once per listen.
    const entry: Callback = (payload, version) => callback(payload, version);
    this.callbacks[channel].add(entry);
    try {
      await this.connected();
    } catch (error) {
      this.callbacks[channel].delete(entry);
      throw error;
    }
    return async () => void this.callbacks[channel].delete(entry);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client ?? (await this.connecting?.catch(() => null));
    this.client = null;
    await client?.end().catch(() => {});
  }

  private connected(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<pg.Client> {
    // Keepalive: a peer that vanished without closing the socket is noticed, and the connection
    // replaced, instead of the listener waiting forever on a dead socket.
    const client = new pg.Client({
      ...connectionConfig(this.url),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client.on('notification', (message) => {
      const channel = (Object.keys(CHANNELS) as NotifyChannel[]).find((c) => CHANNELS[c] === message.channel);
      if (channel && !this.own.has(message.processId)) this.dispatch(channel, message.payload ?? '');
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(
        Object.values(CHANNELS)
          .map((name) => `LISTEN ${name}`)
          .join('; '),
      );
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      throw new Error('the store is closed');
    }
    this.client = client;
    this.retryMs = RETRY_MIN_MS;
    return client;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => {});
    this.reconnect();
  }

  private reconnect(): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connected().then(
        () => {
          for (const channel of Object.keys(this.callbacks) as NotifyChannel[]) this.dispatch(channel, '');
        },
        () => {
          this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
          this.reconnect();
        },
      );
    }, this.retryMs);
    // A store whose only remaining work is reconnecting must not keep the process alive.
    this.retryTimer.unref();
  }

  /**
   * A wake-up of this store's own commit (see the class), in the next turn of the event loop, as
   * SQLite's: by then the writer has its result (a pass knows the versions it wrote).
   */
  deliver(channel: NotifyChannel, payload: string): void {
    setImmediate(() => {
      if (!this.closed) this.dispatch(channel, payload);
    });
  }

  private dispatch(channel: NotifyChannel, payload: string): void {
    const callbacks = [...this.callbacks[channel]];
    for (const { stream, version } of parseWakeups(payload)) {
      for (const callback of callbacks) {
        try {
          callback(stream, version);
        } catch {
          // A callback's failure is the caller's; it must not stop the others or the connection.
        }
      }
    }
  }
}

/** Sends [channel, payload] pairs: the wake-ups of a transaction right behind its `COMMIT`, or the Notifier's. */
export const NOTIFY = prepared('notify', 'SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)');

/** NOTIFY's params for `wakeups`. */
export function notifyParams(wakeups: Iterable<[NotifyChannel, string]>): [string, string] {
  const pairs = [...wakeups];
  return [textArray(pairs.map(([channel]) => CHANNELS[channel])), textArray(pairs.map(([, payload]) => payload))];
}

/**
 * Sends wake-ups after commit, never inside the writing transaction: PostgreSQL serializes the
 * commits of notifying transactions on one global lock, disk flush included, which capped
 * concurrent appends at one flush at a time (measured: 444 appends/s with 8 appenders). A
 * notify-only statement writes no WAL and holds that lock for microseconds. Wake-ups queued while
 * one is in flight go out together in the next. A crash between commit and send loses the wake-up,
 * not the data: listeners poll as well.
 */
export class Notifier {
  private readonly queued = new Map<string, [string, string]>();
  private flushing: Promise<void> | null = null;

  constructor(private readonly pool: pg.Pool) {}

  send(channel: NotifyChannel, payload: string): void {
    this.queued.set(`${channel}\u0000${payload}`, [CHANNELS[channel], payload]);
    this.flushing ??= this.flush();
  }

  /** Resolves once every queued wake-up was sent. */
  async drain(): Promise<void> {
    await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.queued.size > 0) {
      const items = [...this.queued.values()];
      this.queued.clear();
      await this.pool
        .query({ ...NOTIFY, values: [textArray(items.map(([c]) => c)), textArray(items.map(([, p]) => p))] })
        .catch(() => {});
    }
    this.flushing = null;
  }
}
