import { matchPath } from './http.js';

/** One request the services received (control endpoints `/_…` are not logged). */
export interface MockCall {
  /** 1, 2, 3 … in order of arrival. */
  seq: number;
  /** Arrival time, ISO 8601. */
  at: string;
  method: string;
  path: string;
  idempotency_key: string | null;
  /** The parsed JSON body, if any. */
  body: unknown;
  /** The status answered; null while it is being answered, or when the connection was dropped. */
  status: number | null;
  /** The id of the fault rule that applied (`fault-3`), if one did. */
  fault: string | null;
  /** True when an `Idempotency-Key` repeat was answered with the first response. */
  replayed: boolean;
  dropped: boolean;
  /** Milliseconds from arrival to answer. */
  ms: number | null;
}

export interface CallFilter {
  method?: string;
  /** A path or a pattern with `{x}` / `*` segments. */
  path?: string;
}

export class CallLog {
  private entries: MockCall[] = [];

  start(entry: Pick<MockCall, 'method' | 'path' | 'idempotency_key' | 'body'>): MockCall {
    const call: MockCall = {
      seq: this.entries.length + 1,
      at: new Date().toISOString(),
      ...entry,
      status: null,
      fault: null,
      replayed: false,
      dropped: false,
      ms: null,
    };
    this.entries.push(call);
    return call;
  }

  list(filter: CallFilter = {}): MockCall[] {
    return this.entries
      .filter(
        (c) =>
          (!filter.method || c.method === filter.method.toUpperCase()) &&
          (!filter.path || matchPath(filter.path, c.path) !== undefined),
      )
      .map((c) => ({ ...c }));
  }

  clear(): void {
    this.entries = [];
  }
}
