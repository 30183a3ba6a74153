import type { Journal, Watch } from '../journal/journal.js';
import type { Channels } from './channels.js';
import { channelOf, type Message } from './message.js';

/** Sends one message to a follower; false when it cannot take more for now (its buffer is full). */
export type Send = (message: Message) => boolean;

export interface Following {
  /** The seq of the last message handed to `send`. */
  readonly delivered: number;
  /** Sends again after `send` said the follower was full. */
  resume(): void;
  stop(): void;
}

interface Follower {
  delivered: number;
  paused: boolean;
  send: Send;
}

interface Channel {
  followers: Set<Follower>;
  reading: boolean;
  again: boolean;
}

const PAGE = 500;

/**
 * Live messages of channels for this process's followers (WebSocket clients). A follower starts
 * after a seq and then sees every later message once, in order. The journal is read only when it
 * says a channel changed (in process on SQLite, LISTEN/NOTIFY on PostgreSQL): once per wake-up per
 * channel however many followers it has, and not at all while nothing happens. Messages this
 * process posts are handed over at once, without a read. A follower that
 * is full is skipped until it resumes and then continues from the journal, so a slow follower
 * costs no memory here: its backlog stays in the database.
 *
 * @example
 * const feed = await ChannelFeed.open(journal, channels);
 * const following = feed.follow('general', 0, (m) => (socket.send(JSON.stringify(m)), socket.bufferedAmount < 1 << 20));
 */
export class ChannelFeed {
  private readonly channels = new Map<string, Channel>();
  private watch: Watch | null = null;
  private unwatch: (() => void) | null = null;
  private poll: NodeJS.Timeout | null = null;

  private constructor(private readonly source: Channels) {}

  /**
   * `pollMs`: also look at every followed channel this often, for writers whose commits do not wake
   * this process (other processes on one SQLite file). Without it, nothing is read while nothing happens.
   */
  static async open(journal: Journal, source: Channels, options: { pollMs?: number } = {}): Promise<ChannelFeed> {
    const feed = new ChannelFeed(source);
    if (options.pollMs) {
      feed.poll = setInterval(() => {
        for (const id of feed.channels.keys()) feed.wake(id);
      }, options.pollMs).unref();
    }
    // it acts on each notice itself, per channel: its Wakeup is never waited on
    feed.watch = await journal.watch((stream, version) => {
      if (stream === '') for (const id of feed.channels.keys()) feed.wake(id);
      else {
        const id = channelOf(stream);
        if (id !== null) feed.changed(id, version);
      }
      return false;
    });
    feed.unwatch = source.watch((message) => feed.offer(message));
    return feed;
  }

  /** A channel's stream reached `version`: read, unless every follower already has it (this process posted it). */
  private changed(channelId: string, version: number | undefined): void {
    if (!this.channels.has(channelId)) return;
    // after the writer's own continuation: a post from this process is offered before we look
    setImmediate(() => {
      const channel = this.channels.get(channelId);
      if (!channel) return;
      if (version !== undefined && !channel.reading && [...channel.followers].every((f) => f.delivered >= version))
        return;
      this.wake(channelId);
    });
  }

  /** A message committed by this process: handed straight to the followers it is next for; any other follower reads. */
  private offer(message: Message): void {
    const channel = this.channels.get(message.channel_id);
    if (!channel) return;
    let behind = false;
    for (const follower of channel.followers) {
      if (follower.paused) continue;
      if (message.seq !== follower.delivered + 1 || channel.reading) behind ||= message.seq > follower.delivered;
      else {
        follower.delivered = message.seq;
        if (!follower.send(message)) follower.paused = true;
      }
    }
    if (behind) this.wake(message.channel_id);
  }

  /** Sends every message after `after`, then each new one, in order, each once. */
  follow(channelId: string, after: number, send: Send): Following {
    let channel = this.channels.get(channelId);
    if (!channel) this.channels.set(channelId, (channel = { followers: new Set(), reading: false, again: false }));
    const follower: Follower = { delivered: after, paused: false, send };
    channel.followers.add(follower);
    this.wake(channelId);
    return {
      get delivered() {
        return follower.delivered;
      },
      resume: () => {
        follower.paused = false;
        this.wake(channelId);
      },
      stop: () => this.leave(channelId, follower),
    };
  }

  /** Followers of `channelId` in this process (for transient frames such as reply deltas). */
  count(channelId: string): number {
    return this.channels.get(channelId)?.followers.size ?? 0;
  }

  async close(): Promise<void> {
    if (this.poll) clearInterval(this.poll);
    this.unwatch?.();
    await this.watch?.stop();
    this.channels.clear();
  }

  private leave(channelId: string, follower: Follower): void {
    const channel = this.channels.get(channelId);
    if (!channel) return;
    channel.followers.delete(follower);
    if (channel.followers.size === 0 && !channel.reading) this.channels.delete(channelId);
  }

  /** Reads what the slowest follower has not seen and hands each follower the messages it has not; one read at a time per channel. */
  private wake(channelId: string): void {
    const channel = this.channels.get(channelId);
    if (!channel) return;
    if (channel.reading) {
      channel.again = true;
      return;
    }
    channel.reading = true;
    void this.read(channelId, channel).finally(() => {
      channel.reading = false;
      if (channel.followers.size === 0) this.channels.delete(channelId);
    });
  }

  private async read(channelId: string, channel: Channel): Promise<void> {
    do {
      channel.again = false;
      for (;;) {
        const active = [...channel.followers].filter((f) => !f.paused);
        if (active.length === 0) return;
        const from = Math.min(...active.map((f) => f.delivered));
        let page: Message[];
        try {
          page = (await this.source.history(channelId, { after: from, limit: PAGE })).messages;
        } catch {
          // the database is away: the next wake-up (or reconnect, which wakes every channel) retries
          return;
        }
        for (const message of page) {
          for (const follower of active) {
            if (follower.paused || message.seq !== follower.delivered + 1) continue;
            follower.delivered = message.seq;
            if (!follower.send(message)) follower.paused = true;
          }
        }
        if (page.length < PAGE) break;
      }
    } while (channel.again);
  }
}
