import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback between the engine and PostgreSQL that can drop every connection at
 * once or stall them (nothing forwarded either way, new connections included) for a while.
 */
export class Proxy {
  private readonly pairs = new Set<[Socket, Socket]>();
  private server: Server | null = null;
  private stalled = false;
  port = 0;
  drops = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<this> {
    this.server = createServer((client) => {
      const upstream = connect(this.target);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      if (this.stalled) this.pause(pair);
      const end = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** A PostgreSQL URL through the proxy instead of straight to the server. */
  through(url: string): string {
    const u = new URL(url);
    u.host = `127.0.0.1:${this.port}`;
    return u.toString();
  }

  /** Resets every connection (both sides see it closed, mid-query or idle). */
  dropAll(): number {
    const n = this.pairs.size;
    for (const [client, upstream] of this.pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.pairs.clear();
    this.drops += n;
    return n;
  }

  /** Forwards nothing for `ms`, then everything that waited. */
  async stall(ms: number): Promise<void> {
    this.stalled = true;
    for (const pair of this.pairs) this.pause(pair);
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.stalled = false;
    for (const [client, upstream] of this.pairs) {
      client.resume();
      upstream.resume();
    }
  }

  private pause([client, upstream]: [Socket, Socket]): void {
    client.pause();
    upstream.pause();
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
