import type { Logger } from 'pino';
import type { Agent } from '../agents/agent.js';
import { AgentLedger } from '../agents/ledger.js';
import { RemoteLedger } from '../agents/remote.js';
import { sessions, type SessionService } from '../agents/service.js';
import type { Tool } from '../agents/tools.js';
import { Channels } from '../chat/channels.js';
import { startReplyWorker, type ReplyDelta } from '../chat/reply.js';
import type { Engine } from '../engine.js';
import { ConflictError } from '../errors.js';
import type { Model } from '../runtime/model.js';
import type { Workflow } from '../runtime/workflow.js';
import { triggers, type TriggerService } from '../triggers/service.js';
import { createRunStarter } from '../triggers/starter.js';
import { storedModel } from '../models/stored.js';
import { workflowService, type WorkflowService } from '../workflows/service.js';
import { knownSecrets } from '../workflows/known.js';
import { logEvents } from '../observe/log.js';
import { chatRetention } from '../chat/retention.js';
import type { RetentionPolicy } from '../retention/policy.js';
import { notifications, type Notifications } from '../notifications/service.js';

export interface AssembleOptions {
  secretKey: Buffer;
  /** Hosts and CIDRs `http_request` steps and HTTP agents may reach although the SSRF guard refuses them. */
  allow: string[];
  logger: Logger;
  /** The model that answers `role: user` chat messages (src/models: `offlineModel()`, `modelFromEnv(env)`). */
  chatModel: Model;
  /** Run executions, sessions, AI replies, event routing and schedules in this process. */
  workers: boolean;
  agents?: Agent[];
  /** The tools ledger agents call (`defineTool`). */
  tools?: Tool[];
  /** The agent of an inbound event (`POST /agent/events`) that names none. Default `sample-agent`. */
  defaultAgent?: string;
  /** Code workflows rules and schedules may name; also registered with the engine. */
  codeWorkflows?: Workflow[];
  /** The base of the URLs handed to services (`wait_for_callback` URLs, HTTP agents' `report_url`); without it, a step that needs one fails naming RUNLEDGER_PUBLIC_URL. */
  publicUrl?: string;
  /** Deletes finished records by these ages, continuously, when this process runs workers (RUNLEDGER_RETENTION). */
  retention?: RetentionPolicy;
  /** Tokens of AI replies as they are generated (the server forwards them to sockets). */
  onDelta?: (delta: ReplyDelta) => void;
}

export interface App {
  workflows: WorkflowService;
  channels: Channels;
  sessions: SessionService;
  ledger: AgentLedger;
  /** The ledger writes of HTTP agents (the agent protocol's routes). */
  remote: RemoteLedger;
  triggers: TriggerService;
  /** Outbound webhooks fed by the journal (docs/notifications.md). */
  notifications: Notifications;
  stop(): Promise<void>;
}

/** The rule `runledger trigger --source manual-trigger --detail-type execute-agent` relies on, out of the box. */
export const MANUAL_AGENT_RULE = {
  name: 'manual-agent',
  pattern: { source: ['manual-trigger'], 'detail-type': ['execute-agent'] },
  target: { agent: 'sample-agent' },
  input: { session_id: '$.id', detail: '$.detail' },
};

/**
 * The product assembled on an engine, once, for the server, `runledger worker`, `runledger prune`
 * and the tests: stored workflows, chat channels, agent sessions and the agent ledger, triggers with
 * the shipped rule, the log subscription and chat's retention kind, and (with `workers`) the
 * consumers that do the work — run passes, AI replies, event routing, schedules, retention.
 *
 * @example
 * const engine = await createEngine({ database: 'runledger.db' });
 * const app = await assemble(engine, { secretKey, allow: [], logger: pino(), chatModel: offlineModel(), workers: true });
 * await app.workflows.executions.execute('wf_01J…', { trigger_data: { name: 'Ada' } });
 */
export async function assemble(engine: Engine, options: AssembleOptions): Promise<App> {
  const { logger } = options;
  // the one place features are handed the store: they read and write it only through what they are given
  const store = engine.store;
  const workflows = workflowService(engine, store, {
    secretKey: options.secretKey,
    allow: options.allow,
    models: storedModel,
    log: ({ level, message, ...ids }) => logger[level](ids, message),
    ...(options.publicUrl ? { callbackBaseUrl: options.publicUrl } : {}),
  });
  engine.register(...(options.codeWorkflows ?? []));
  const channels = new Channels(store, engine.journal);
  engine.retention.register(chatRetention());
  const agentSessions = sessions(engine, store, {
    agents: options.agents ?? [],
    tools: options.tools ?? [],
    allow: options.allow,
    ...(options.publicUrl ? { reportBaseUrl: options.publicUrl } : {}),
  });
  const ledger = new AgentLedger(engine, store, agentSessions, {
    defaultAgent: options.defaultAgent ?? 'sample-agent',
  });
  const starter = createRunStarter({
    engine,
    store,
    workflows,
    agents: agentSessions,
  });
  // reported as engine events: the logger (logEvents) writes them, metrics and tests may count them
  const onError = (what: string) => (error: unknown) => engine.events.emit('engine:error', { what, error });
  const stopLogging = logEvents(engine.events, logger, knownSecrets(workflows.secrets));
  const triggerService = triggers(engine, store, {
    starter,
    routingEnabled: options.workers,
    schedulerEnabled: options.workers,
    onError: onError('trigger failed'),
  });
  await ensureRule(triggerService);
  await triggerService.start();
  if (options.workers && options.retention) engine.retention.start(options.retention);
  const notify = notifications(engine, store, { allow: options.allow, onError: onError('notification failed') });
  if (options.workers) await notify.start();
  if (options.workers)
    await startReplyWorker(engine, channels, options.chatModel, {
      onError: onError('chat reply failed'),
      ...(options.onDelta ? { onDelta: options.onDelta } : {}),
    });
  return {
    workflows,
    channels,
    sessions: agentSessions,
    ledger,
    remote: new RemoteLedger(engine, store, agentSessions),
    triggers: triggerService,
    notifications: notify,
    // the engine stops its workers and subscriptions when it closes; the scheduler is ours
    stop: async () => {
      stopLogging();
      await triggerService.stop();
    },
  };
}

async function ensureRule(service: TriggerService): Promise<void> {
  try {
    await service.rules.create(MANUAL_AGENT_RULE);
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
}
