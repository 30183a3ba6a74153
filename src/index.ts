export { createEngine, type Engine } from './engine.js';
export { resolveConfig, type Config, type RunledgerOptions } from './config.js';
export {
  RunledgerError,
  NotFoundError,
  ValidationError,
  ConflictError,
  LeaseLostError,
  TerminalError,
  NonDeterminismError,
  CancelledError,
  TimeoutError,
  RetryAfterError,
  StoreUnavailableError,
  StepTimedOutError,
  BudgetExceededError,
  type Problem,
} from './errors.js';
export { LimitReachedError } from './runtime/start/limits.js';
export type {
  FlowOptions,
  ConcurrencyLimit,
  Throttle,
  Debounce,
  Batch,
  StartInput,
  Budget,
  Usage,
  RateLimitUse,
} from './runtime/flow.js';
export {
  workflow,
  partialSuccess,
  type Workflow,
  type WorkflowContext,
  type StepContext,
  type StepOptions,
  type RetryPolicy,
  type PollOptions,
  type PollCancel,
  type BranchResult,
  type WorkflowOptions,
} from './runtime/workflow.js';
export type { RunHandle, StartOptions } from './runtime/runtime.js';
export {
  GenerationError,
  type GenerationFailure,
  type GenerateOptions,
  type Generation,
  type GenerationUsage,
  type Model,
  type ModelMessage,
  type ModelPart,
  type ModelRequest,
} from './runtime/model.js';
export { offlineModel, type OfflineModelOptions } from './models/offline.js';
export { openAiCompatibleModel, type OpenAiCompatibleModelOptions } from './models/openai-compatible.js';
export { modelFromEnv } from './models/env.js';
export type { RunView, RunStatus, StepView, CancelView } from './runtime/read/view.js';
export type { Duration } from './duration.js';
// reached through the engine (engine.journal, engine.queue, engine.work, engine.subscribe): their types, not their constructors
export type { Journal, AppendOptions, Projection } from './journal/journal.js';
export type { Subscriber, EventHandler, HandlerContext, SubscribeOptions } from './journal/subscription.js';
export type { TaskQueue, EnqueueOptions, EnqueueResult } from './queue/queue.js';
export type { Worker } from './queue/worker.js';
export type { TaskHandler, TaskContext, WorkOptions } from './queue/handler.js';
export type { BatchItem, BatchTaskHandler, TaskBatch } from './queue/batch.js';
export type { Backoff } from './backoff.js';
export type {
  Store,
  StoredEvent,
  NewEvent,
  EventMetadata,
  Task,
  TaskState,
  Subscription,
  ParkedEvent,
  Cursor,
} from './storage/store.js';
export { storedWorkflows } from './app/workflows.js';
export type { WorkflowService, WorkflowServiceOptions } from './workflows/service.js';
export { parseDefinition, type Definition, type StepDefinition } from './workflows/schema.js';
export type { StoredWorkflow } from './workflows/definitions.js';
export type { ExecutionRecord, ExecutionSummary, ExecutionStatus, StepRecord } from './workflows/executions.js';
export { loadSecretKey, type SecretInfo } from './workflows/secrets.js';
export { InterpolationError } from './workflows/template/parse.js';
export { defineAgent, type Agent, type AgentContext } from './agents/agent.js';
export type { AgentFlowOptions, AgentLimit, AgentDebounce, AgentBatch } from './agents/agent-flow.js';
export {
  defineTool,
  ToolError,
  ToolTimeoutError,
  ToolBlockedError,
  type Tool,
  type ToolContext,
  type ToolDefinition,
} from './agents/tools.js';
export type { AgentLedger, AgentEventInput, IntakeResult, AgentRunDetail } from './agents/ledger.js';
export type { AgentEvent, AgentRun, AgentStep, AgentToolCall, AgentCheckpoint } from './agents/contracts.js';
export type { Channels, PostResult, HistoryPage } from './chat/channels.js';
export type { Message, PostInput } from './chat/message.js';
export type { EngineEventMap, EngineEventName, RunKind, RunOutcome } from './observe/events.js';
export { createMetrics, type Metrics } from './observe/metrics.js';
export { startTracing } from './observe/otel.js';
export type { Tracer, Span } from './observe/trace.js';
export { parseRetention, type RetentionPolicy } from './retention/policy.js';
