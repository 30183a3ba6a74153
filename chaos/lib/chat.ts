import { setTimeout as sleep } from 'node:timers/promises';
import type { Api } from './api.js';
import type { ScenarioContext } from './context.js';

interface Message {
  seq: number;
  event_id: string;
  message_id: string;
  role: string;
  metadata: { reply_to?: string };
}

/**
 * Chat as load: user messages posted over several channels, each with its own `event_id` and sent
 * again after a failure until stored. `figures` reads every channel's history and counts each
 * message stored other than once, and each message answered other than once.
 */
export class ChatLoad {
  /** event_id → channel, of every message the server accepted. */
  readonly accepted = new Map<string, string>();
  readonly refused: string[] = [];
  private posted = 0;

  constructor(
    private readonly ctx: ScenarioContext,
    private readonly api: Api,
    private readonly channels = 4,
  ) {}

  /** Posts `count` more messages (fewer if `enough()` says so first), `concurrency` at a time, `pauseMs` apart per lane. */
  async post(count: number, concurrency = 2, pauseMs = 0, enough: () => boolean = () => false): Promise<void> {
    const first = this.posted;
    this.posted += count;
    let next = first;
    const lane = async () => {
      while (next < first + count && this.ctx.msLeft() > 0 && !enough()) {
        const n = next++;
        const ok = await this.postOne(`chaos-c${n % this.channels}`, `m-${n}`, `message ${n}`);
        if (pauseMs > 0 && ok) await sleep(pauseMs);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  }

  async postOne(channel: string, eventId: string, content: string): Promise<boolean> {
    const answer = await this.api.send(
      'POST',
      `/channels/${channel}/messages`,
      { event_id: eventId, sender_id: 'chaos', role: 'user', content },
      {},
      this.ctx.deadline,
    );
    if (answer && (answer.status === 201 || answer.status === 200)) {
      this.accepted.set(eventId, channel);
      return true;
    }
    this.refused.push(
      `${eventId}: ${answer ? `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}` : 'no answer in time'}`,
    );
    return false;
  }

  /** Seconds from `since` until the reply to `eventId` is stored; null after `limitMs`. */
  async replied(channel: string, eventId: string, since: number, limitMs: number): Promise<number | null> {
    while (Date.now() - since < limitMs) {
      const answer = await this.api.once('GET', `/channels/${channel}/messages?limit=50`).catch(() => null);
      if (answer?.status === 200 && (answer.body.messages as Message[]).some((m) => m.event_id === `reply:${eventId}`))
        return Math.round((Date.now() - since) / 100) / 10;
      await sleep(200);
    }
    return null;
  }

  private async history(channel: string): Promise<Message[]> {
    const all: Message[] = [];
    for (let after = 0; ; ) {
      const answer = await this.api.send('GET', `/channels/${channel}/messages?after=${after}&limit=500`);
      if (answer?.status !== 200) throw new Error(`history of ${channel}: ${answer?.status}`);
      const page = answer.body.messages as Message[];
      all.push(...page);
      if (page.length < 500) return all;
      after = page.at(-1)!.seq;
    }
  }

  /**
   * Waits (until `deadline`) for every accepted message to have its reply, then counts: lost (an
   * accepted message missing), duplicated (a message stored twice, or answered twice), stuck (no
   * reply yet).
   */
  async figures(deadline: number): Promise<{ lost: number; duplicated: number; stuck: number; note: string }> {
    const channels = [...new Set(this.accepted.values())];
    for (;;) {
      const messages = (await Promise.all(channels.map((c) => this.history(c)))).flat();
      const stored = new Map<string, number>();
      const replies = new Map<string, number>();
      for (const m of messages) {
        if (m.role === 'user') stored.set(m.event_id, (stored.get(m.event_id) ?? 0) + 1);
        if (m.event_id.startsWith('reply:'))
          replies.set(m.event_id.slice('reply:'.length), (replies.get(m.event_id.slice('reply:'.length)) ?? 0) + 1);
      }
      let lost = 0;
      let duplicated = 0;
      let stuck = 0;
      for (const eventId of this.accepted.keys()) {
        const times = stored.get(eventId) ?? 0;
        if (times === 0) lost += 1;
        duplicated += Math.max(0, times - 1) + Math.max(0, (replies.get(eventId) ?? 0) - 1);
        if (times > 0 && !replies.has(eventId)) stuck += 1;
      }
      if (stuck === 0 || Date.now() > deadline) {
        const note = `messages ${this.accepted.size} accepted, ${this.refused.length} refused${this.refused.length ? ` (${this.refused[0]})` : ''}; ${messages.length} stored with replies`;
        return { lost, duplicated, stuck, note };
      }
      await sleep(500);
    }
  }
}
