/**
 * Every environment variable runledger reads, declared once: the CLI and server read them through
 * `envValue`, and `npm run docs:config` writes `docs/configuration.md` from this list (a test
 * checks the committed file is the generated one, and that no source file reads a variable
 * missing here). Flags are documented from the CLI's own definitions, so neither can drift.
 */
export interface Setting {
  /** The variable; `aliases` are read after it, in order. */
  env: string;
  aliases?: readonly string[];
  /** The flag that overrides it, if any. */
  flag?: string;
  /** Which commands read it. */
  used: string;
  default: string;
  doc: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    env: 'RUNLEDGER_DATABASE',
    aliases: ['RUNLEDGER_DB', 'DATABASE_URL'],
    flag: '--database',
    used: 'every command with --database, serve, worker',
    default: './runledger.db',
    doc: 'A SQLite file path, or a `postgres://` URL for many processes on many machines.',
  },
  { env: 'PORT', flag: '--port', used: 'serve', default: '8080', doc: 'The port the HTTP API listens on.' },
  {
    env: 'RUNLEDGER_HEADERS_TIMEOUT_MS',
    used: 'serve',
    default: '10000',
    doc: "How long a client may take to send a request's headers before the server answers 408 and closes the connection.",
  },
  {
    env: 'RUNLEDGER_REQUEST_TIMEOUT_MS',
    used: 'serve',
    default: '30000',
    doc: 'How long a client may take to send a whole request, body included (at least the headers timeout). SSE streams, long-polls and WebSockets may answer for longer.',
  },
  {
    env: 'RUNLEDGER_TOKEN',
    flag: '--token (API commands)',
    used: 'serve, API commands',
    default: '(none)',
    doc: 'The bootstrap admin key (named `bootstrap`): with it, or once an API key exists, every route but `/healthz` needs a key (`/metrics` too). Required to listen on an address other than loopback. See docs/security.md.',
  },
  {
    env: 'RUNLEDGER_ALLOWED_ORIGINS',
    used: 'serve',
    default: '(none)',
    doc: "Comma-separated origins (`https://ops.example.com`) whose web pages may change state on a server without a token, besides the server's own; their host names are also answered besides loopback ones. See docs/security.md.",
  },
  {
    env: 'RUNLEDGER_URL',
    flag: '--url',
    used: 'API commands',
    default: 'http://127.0.0.1:8080',
    doc: 'The server the API commands talk to.',
  },
  {
    env: 'RUNLEDGER_PUBLIC_URL',
    flag: '--public-url (serve, worker)',
    used: 'serve, worker, doctor',
    default: 'serve on a loopback or specific host: its own URL; otherwise (none)',
    doc: "The address other machines reach the API at, path prefix included (`https://runledger.example.com/api`): every `wait_for_callback` URL and HTTP agent `report_url` is `<this>/callbacks/…` or `<this>/sessions/…/report`. With several servers and workers, the load balancer's URL. Without it, a worker or `serve --host 0.0.0.0` has no URL to hand out and such a step fails naming this setting. An absolute http(s) URL with no query or fragment.",
  },
  {
    env: 'RUNLEDGER_SECRET_KEY',
    used: 'serve, worker, doctor',
    default: '(key file)',
    doc: 'The 32-byte key secrets are encrypted with: 64 hex characters or base64. Without it, `<data dir>/secret.key` is used (created on first start, mode 0600).',
  },
  {
    env: 'RUNLEDGER_DATA_DIR',
    used: 'serve, worker, doctor',
    default: "the SQLite file's folder, else the working directory",
    doc: 'Where the secret key file lives.',
  },
  {
    env: 'RUNLEDGER_HTTP_ALLOW',
    used: 'serve, worker',
    default: '(none)',
    doc: 'Comma-separated hosts and CIDRs that `http_request` steps and HTTP agents may reach although the SSRF guard refuses private addresses.',
  },
  {
    env: 'RUNLEDGER_LEASE_MS',
    used: 'serve, worker',
    default: '30000',
    doc: "How long a worker's claim on a task (and so on a run) lasts without renewal.",
  },
  {
    env: 'RUNLEDGER_POLL_MS',
    used: 'serve, worker',
    default: '1000',
    doc: 'The fallback poll of workers and subscriptions when no wake-up arrives.',
  },
  {
    env: 'RUNLEDGER_LOG_LEVEL',
    used: 'serve, worker',
    default: 'info',
    doc: 'fatal, error, warn, info (one line per lifecycle event), debug (also claims and requests), trace or silent. JSON lines, readable ones on a terminal.',
  },
  {
    env: 'RUNLEDGER_RETENTION',
    used: 'serve, worker',
    default: '(keep everything)',
    doc: 'Ages after which finished records are deleted, per kind (`runs`: code runs, stored executions and agent sessions, each whole; `tasks`; `events`; `chat`; `keys`: throttle, debounce and batch keys not started for that long and holding nothing live; `audit`: audit trail rows, 90 days unless set here or by RUNLEDGER_AUDIT_RETENTION): `runs:30d,tasks:7d,events:14d,chat:365d,keys:7d`. Applied continuously in small batches by processes that run workers; `runledger prune` does one pass.',
  },
  {
    env: 'RUNLEDGER_AUDIT_RETENTION',
    used: 'serve, worker',
    default: '90d',
    doc: 'How long rows of the audit trail (`GET /audit`) are kept: a duration (`365d`), or `off` to keep them all. Deleted continuously by processes that run workers, like RUNLEDGER_RETENTION (which wins if it names `audit`); `runledger prune --kind audit` does one pass.',
  },
  {
    env: 'RUNLEDGER_LLM_URL',
    used: 'serve, worker',
    default: '(offline model)',
    doc: 'An OpenAI-compatible server that answers `role: user` chat messages.',
  },
  {
    env: 'RUNLEDGER_LLM_MODEL',
    used: 'serve, worker',
    default: '(none)',
    doc: 'The model to ask; required with RUNLEDGER_LLM_URL.',
  },
  {
    env: 'RUNLEDGER_LLM_API_KEY',
    used: 'serve, worker',
    default: '(none)',
    doc: 'Bearer key for RUNLEDGER_LLM_URL, when it needs one.',
  },
  {
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    used: 'serve, worker',
    default: '(tracing off)',
    doc: 'Turns tracing on: spans for requests, run passes and step attempts are exported over OTLP/HTTP to `<endpoint>/v1/traces`. The OpenTelemetry SDK is not even loaded without it.',
  },
  {
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    used: 'serve, worker',
    default: '(none)',
    doc: 'The full traces URL, instead of the endpoint above.',
  },
  { env: 'OTEL_SERVICE_NAME', used: 'serve, worker', default: 'runledger', doc: 'The service name on exported spans.' },
  {
    env: 'OTEL_SDK_DISABLED',
    used: 'serve, worker',
    default: 'false',
    doc: '`true` turns tracing off although an endpoint is set.',
  },
  {
    env: 'OTEL_TRACES_EXPORTER',
    used: 'serve, worker',
    default: 'otlp',
    doc: '`none` turns tracing off although an endpoint is set. (Other `OTEL_EXPORTER_OTLP_*` variables, such as headers, are read by the exporter itself.)',
  },
  {
    env: 'NO_COLOR',
    used: 'every command',
    default: '(colours on a terminal)',
    doc: 'Any value turns off the status colours of the command line.',
  },
  {
    env: 'RUNLEDGER_TEST_PG_URL',
    used: 'tests',
    default: 'postgres://postgres@127.0.0.1:5432/postgres',
    doc: 'The PostgreSQL server the test suite creates its databases on.',
  },
  {
    env: 'RUNLEDGER_LONG_TESTS',
    used: 'tests',
    default: '',
    doc: "`1` runs the slow tests at the briefs' sizes: the agent ledger's SIGKILL test runs 50 conversations × 20 events on PostgreSQL too (about 4 minutes on a loaded 2-core machine), not 30 × 10.",
  },
];

/** Read by libraries, not by runledger itself: never listed. */
const NOT_OURS = new Set(['HOME']);

/** The variables the docs list, aliases included; a source file reading any other one fails a test. */
export function documentedVariables(): Set<string> {
  return new Set([...NOT_OURS, ...SETTINGS.flatMap((s) => [s.env, ...(s.aliases ?? [])])]);
}

/**
 * The value of a declared setting from `env`: the variable, then its aliases; empty counts as unset.
 *
 * @example envValue(process.env, 'RUNLEDGER_DATABASE') ?? './runledger.db'
 */
export function envValue(env: Record<string, string | undefined>, name: string): string | undefined {
  const setting = SETTINGS.find((s) => s.env === name);
  if (!setting) throw new Error(`${name} is not a declared setting (src/settings.ts)`);
  for (const variable of [setting.env, ...(setting.aliases ?? [])]) {
    const value = env[variable];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}
