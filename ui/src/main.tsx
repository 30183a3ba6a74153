import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { onTokenNeeded } from './api';
import { Link } from './common';
import { DevBanner } from './dev-banner';
import { match, onLinkClick, useLocation } from './router';
import { AgentRunPage } from './pages/agent-run';
import { AgentsPage } from './pages/agents';
import { AuditPage } from './pages/audit';
import { ChannelPage, ChannelsPage } from './pages/channels';
import { DeadPage } from './pages/dead';
import { LimitsPage } from './pages/limits';
import { NotificationPage, NotificationsPage } from './pages/notifications';
import { OverviewPage } from './pages/overview';
import { RunPage } from './pages/run';
import { RunDiffPage } from './pages/run-diff';
import { RunsPage } from './pages/runs';
import { TriggersPage } from './pages/triggers';
import { WorkflowEditPage, WorkflowPage, WorkflowsPage } from './pages/workflows';
import './style.css';

const NAV: Array<[string, string]> = [
  ['/runs', 'Runs'],
  ['/workflows', 'Workflows'],
  ['/dead', 'Dead letters'],
  ['/channels', 'Channels'],
  ['/triggers', 'Triggers'],
  ['/agents', 'Agents'],
  ['/notifications', 'Notifications'],
  ['/limits', 'Limits'],
  ['/overview', 'Overview'],
  ['/audit', 'Audit'],
];

function Route({ path }: { path: string }) {
  let p: Record<string, string> | null;
  if (path === '/' || path === '/runs') return <RunsPage />;
  if ((p = match('/runs/:id', path))) return <RunPage id={p.id!} />;
  if ((p = match('/runs/:a/diff/:b', path))) return <RunDiffPage a={p.a!} b={p.b!} />;
  if (path === '/workflows') return <WorkflowsPage />;
  if (path === '/workflows/new') return <WorkflowEditPage />;
  if ((p = match('/workflows/:id/edit', path))) return <WorkflowEditPage id={p.id!} />;
  if ((p = match('/workflows/:id', path))) return <WorkflowPage id={p.id!} />;
  if (path === '/dead') return <DeadPage />;
  if (path === '/channels') return <ChannelsPage />;
  if ((p = match('/channels/:id', path))) return <ChannelPage id={p.id!} />;
  if (path === '/triggers') return <TriggersPage />;
  if (path === '/agents') return <AgentsPage />;
  if ((p = match('/agents/:id', path))) return <AgentRunPage id={p.id!} />;
  if (path === '/notifications') return <NotificationsPage />;
  if ((p = match('/notifications/:id', path))) return <NotificationPage id={p.id!} />;
  if (path === '/limits') return <LimitsPage />;
  if (path === '/overview') return <OverviewPage />;
  if (path === '/audit') return <AuditPage />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page at <code>{path}</code>. <Link to="/runs">See the runs</Link>.
      </p>
    </section>
  );
}

/** Asks for the API token once (the server answered 401); it is kept in sessionStorage for this tab. */
function TokenDialog() {
  const dialog = useRef<HTMLDialogElement>(null);
  const [state, setState] = useState<{ retry: boolean; resolve: (t: string) => void } | null>(null);
  const [value, setValue] = useState('');
  useEffect(() => onTokenNeeded((retry) => new Promise<string>((resolve) => setState({ retry, resolve }))), []);
  useEffect(() => {
    if (state && !dialog.current?.open) dialog.current?.showModal();
  }, [state]);
  return (
    <dialog ref={dialog} aria-labelledby="token-title" onCancel={(e) => e.preventDefault()}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!value.trim() || !state) return;
          dialog.current?.close();
          state.resolve(value.trim());
          setState(null);
          setValue('');
        }}
      >
        <h2 id="token-title">Token needed</h2>
        <p>
          {state?.retry ? 'That token was refused. ' : ''}This server needs an API key (or its RUNLEDGER_TOKEN). It is
          kept for this tab only.
        </p>
        <label>
          Token{' '}
          <input
            type="password"
            name="token"
            autoComplete="off"
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
            required
            autoFocus
          />
        </label>
        <div class="actions">
          <button type="submit" class="primary">
            Continue
          </button>
        </div>
      </form>
    </dialog>
  );
}

function App() {
  const loc = useLocation();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    // a new page (not the first one: there Tab starts at the skip link): focus its heading, so
    // screen readers announce it and Tab goes on from there
    if (first.current) {
      first.current = false;
      return;
    }
    requestAnimationFrame(() =>
      (main.current?.querySelector('h1') as HTMLElement | null)?.focus({ preventScroll: true }),
    );
  }, [loc.path]);
  const section = `/${loc.path.split('/')[1] || 'runs'}`;
  return (
    // biome-ignore lint/a11y: one delegated handler routes clicks on the links inside (each link is keyboard reachable itself)
    <div class="layout" onClick={onLinkClick as any}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <nav aria-label="Main">
        <Link to="/runs" class="brand">
          runledger
        </Link>
        <ul>
          {NAV.map(([to, label]) => (
            <li key={to}>
              <Link to={to} aria-current={section === to ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={main}>
        <DevBanner />
        <Route path={loc.path} />
      </main>
      <TokenDialog />
    </div>
  );
}

render(<App />, document.getElementById('app')!);
