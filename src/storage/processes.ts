/** The processes that hold leases (`Store.processRegister` and the rest; see `Liveness`). */
export interface ProcessInfo {
  id: string;
  /** The machine it runs on: a process on the same one can tell whether `pid` still lives. */
  host: string;
  pid: number;
  /** When the OS started `pid` (Linux: its start time in clock ticks), to tell a reused pid apart. */
  pidStart: string | null;
  startedAt: number;
  heartbeatAt: number;
  /** What the process runs steps with, as it recorded it (null: it runs none, or predates the record). */
  settings: ProcessSettings | null;
}

/**
 * The settings of a process that change what a step does (an allowlist, a public URL, the model,
 * the secret key's identity, the version), so processes sharing a database can tell they differ.
 * Values are what may be shown: a key is recorded only as a hash of its hash.
 */
export interface ProcessSettings {
  /** What the process is: `serve`, `worker`, or `app` when started from code. */
  role: string;
  values: Record<string, string>;
}

/** What `processRegister` records. */
export interface ProcessRegistration {
  id: string;
  host: string;
  pid: number;
  pidStart: string | null;
  settings?: ProcessSettings | null | undefined;
}

/** The settings column as stored (JSON text in both dialects), or null when absent or unreadable. */
export function parseSettings(text: string | null): ProcessSettings | null {
  if (!text) return null;
  try {
    const parsed = JSON.parse(text) as ProcessSettings;
    return typeof parsed?.role === 'string' && typeof parsed.values === 'object' && parsed.values !== null
      ? parsed
      : null;
  } catch {
    return null;
  }
}

export interface ProcessesEnded {
  processes: string[];
  /** Task leases and subscription leases ended. */
  tasks: number;
  subscriptions: number;
}

/** The prefix of the worker ids and subscription owners of a process: how its leases name it. */
export function leaseHolderPrefix(processId: string): string {
  return `${processId}:`;
}
