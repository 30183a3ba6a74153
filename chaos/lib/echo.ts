import { createServer, type Server } from 'node:http';

/** One request the echo server took: which effect it was, with which Idempotency-Key, when. */
export interface Receipt {
  effect: string;
  key: string | null;
  authorization: string | null;
  at: number;
}

/**
 * A counting echo server on loopback: the side effect the chaos workflows make. Every POST
 * `{ "effect": "…" }` is recorded with its `Idempotency-Key`; the answer comes after `delayMs()`.
 */
export class Echo {
  readonly receipts: Receipt[] = [];
  private server: Server | null = null;
  url = '';

  constructor(private readonly delayMs: () => number = () => 0) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        let effect = '';
        try {
          effect = String((JSON.parse(body) as { effect?: unknown }).effect ?? '');
        } catch {
          effect = body;
        }
        const receipt = {
          effect,
          key: header(req.headers['idempotency-key']),
          authorization: header(req.headers.authorization),
          at: Date.now(),
        };
        this.receipts.push(receipt);
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ ok: true, effect }));
        }, this.delayMs());
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  /**
   * Per effect: `duplicated` counts the keys beyond the first (the receiver could not tell the
   * repeat), `sameKey` the repeats with a key already seen (it could), `missing` the expected
   * effects never received.
   */
  tally(expected: Iterable<string>): { received: number; duplicated: number; sameKey: number; missing: string[] } {
    const keys = new Map<string, Map<string | null, number>>();
    for (const r of this.receipts) {
      const byKey = keys.get(r.effect) ?? new Map<string | null, number>();
      byKey.set(r.key, (byKey.get(r.key) ?? 0) + 1);
      keys.set(r.effect, byKey);
    }
    let duplicated = 0;
    let sameKey = 0;
    for (const byKey of keys.values()) {
      duplicated += byKey.size - 1;
      for (const count of byKey.values()) sameKey += count - 1;
    }
    const missing = [...expected].filter((e) => !keys.has(e));
    return { received: this.receipts.length, duplicated, sameKey, missing };
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function header(value: string | string[] | undefined): string | null {
  return value === undefined ? null : Array.isArray(value) ? value.join(',') : value;
}
