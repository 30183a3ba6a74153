import { useEffect, useRef, useState } from 'preact/hooks';
import { api, socketUrl } from '../api';
import { ErrorBox, Link, Page, time, useLoad } from '../common';
import { navigate } from '../router';

interface Channel {
  channel_id: string;
  last_seq: number;
  messages: number;
  [key: string]: unknown;
}

interface Message {
  channel_id: string;
  seq: number;
  event_id: string;
  message_id: string;
  sender_id: string;
  role: string;
  content: string;
  created_at_iso: string;
}

export function ChannelsPage() {
  const { data, error } = useLoad((signal) => api<{ channels: Channel[] }>('/channels?limit=500', { signal }), []);
  const [name, setName] = useState('');
  return (
    <Page title="Channels">
      <ErrorBox error={error} />
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) navigate(`/channels/${encodeURIComponent(name.trim())}`);
        }}
      >
        <label>
          Open or start a channel{' '}
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="support-42" />
        </label>
        <button type="submit">Open</button>
      </form>
      <table>
        <thead>
          <tr>
            <th scope="col">Channel</th>
            <th scope="col">Messages</th>
            <th scope="col">Last activity</th>
          </tr>
        </thead>
        <tbody>
          {(data?.channels ?? []).map((c: any) => (
            <tr key={c.channel_id}>
              <td>
                <Link to={`/channels/${encodeURIComponent(c.channel_id)}`} class="mono">
                  {c.channel_id}
                </Link>
              </td>
              <td>{c.message_count ?? c.messages ?? c.last_seq}</td>
              <td>{time(c.updated_at)}</td>
            </tr>
          ))}
          {data && data.channels.length === 0 ? (
            <tr>
              <td colSpan={3} class="empty">
                No channels yet: open one above and post.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </Page>
  );
}

/** A channel live over its WebSocket: history, new messages, and an AI reply's tokens as they arrive. */
export function ChannelPage({ id }: { id: string }) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [drafts, setDrafts] = useState<Record<string, string>>({});
  const [state, setState] = useState<'connecting' | 'live' | 'closed'>('connecting');
  const [deltas, setDeltas] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const [text, setText] = useState('');
  const [sender, setSender] = useState('dashboard');
  const socket = useRef<WebSocket | null>(null);
  const last = useRef(0);
  const list = useRef<HTMLOListElement>(null);

  useEffect(() => {
    let stopped = false;
    let retry: ReturnType<typeof setTimeout>;
    setMessages([]);
    last.current = 0;
    const connect = async () => {
      if (last.current === 0) {
        // a request first: a server that wants a token asks for it here, before the socket needs it
        try {
          await api(`/channels/${encodeURIComponent(id)}/messages?limit=1`);
        } catch (e) {
          setError(e);
        }
      }
      if (stopped) return;
      const ws = new WebSocket(socketUrl(`/channels/${encodeURIComponent(id)}/ws?after=${last.current}`));
      socket.current = ws;
      ws.onopen = () => setState('live');
      ws.onclose = () => {
        setState('closed');
        if (!stopped) retry = setTimeout(connect, 1000);
      };
      ws.onmessage = (e) => {
        const frame = JSON.parse(e.data);
        if (frame.type === 'message') {
          const m = frame.message as Message;
          if (m.seq <= last.current) return;
          last.current = m.seq;
          setMessages((old) => [...old, m]);
          setDrafts((d) => {
            if (!(m.event_id in d)) return d;
            const { [m.event_id]: _, ...rest } = d;
            return rest;
          });
        } else if (frame.type === 'delta') {
          setDeltas((n) => n + 1);
          // a piece goes at its offset `at`: a new try of the reply starts again at 0, a piece after a gap is appended
          setDrafts((d) => {
            const draft = d[frame.event_id] ?? '';
            const at = typeof frame.at === 'number' && frame.at <= draft.length ? frame.at : draft.length;
            return { ...d, [frame.event_id]: draft.slice(0, at) + frame.delta };
          });
        } else if (frame.type === 'error') setError(frame.error);
      };
    };
    void connect();
    return () => {
      stopped = true;
      clearTimeout(retry);
      socket.current?.close();
    };
  }, [id]);

  useEffect(() => {
    list.current?.lastElementChild?.scrollIntoView({ block: 'end' });
  }, [messages.length, drafts]);

  const post = (e: Event) => {
    e.preventDefault();
    if (!text.trim() || socket.current?.readyState !== WebSocket.OPEN) return;
    setError(null);
    socket.current.send(JSON.stringify({ type: 'post', message: { sender_id: sender, role: 'user', content: text } }));
    setText('');
  };

  return (
    <Page
      title={
        <>
          Channel <span class="mono">{id}</span>
        </>
      }
      tab={`Channel ${id}`}
      actions={
        <span class={`live ${state === 'live' ? 'on' : ''}`} role="status">
          {state}
        </span>
      }
    >
      <ol class="chat" ref={list} aria-live="polite" aria-label="Messages" data-deltas={deltas}>
        {messages.map((m) => (
          <li key={m.seq} class={`msg msg-${m.role === 'ai' ? 'assistant' : m.role}`} data-role={m.role}>
            <div class="meta">
              <strong>{m.sender_id}</strong>{' '}
              <span class="muted">
                {m.role} · {time(m.created_at_iso)}
              </span>
            </div>
            <div class="content">{m.content}</div>
          </li>
        ))}
        {Object.entries(drafts).map(([key, content]) => (
          <li key={key} class="msg msg-assistant typing" data-role="ai-typing" aria-busy="true">
            <div class="meta">
              <strong>ai</strong> <span class="muted">typing…</span>
            </div>
            <div class="content">{content}</div>
          </li>
        ))}
      </ol>
      <ErrorBox error={error} />
      <form class="compose" onSubmit={post} aria-label="Post a message">
        <label>
          As <input value={sender} onInput={(e) => setSender(e.currentTarget.value)} size={12} />
        </label>
        <label class="grow">
          Message{' '}
          <input name="message" value={text} onInput={(e) => setText(e.currentTarget.value)} autoComplete="off" />
        </label>
        <button type="submit" class="primary" disabled={state !== 'live'}>
          Post
        </button>
      </form>
    </Page>
  );
}
