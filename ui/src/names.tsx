import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import { Link } from './common';

/** What a run record says of its workflow: a code run's name, or a stored workflow's id (and its name on servers that send it). */
export interface WorkflowOf {
  workflow: string;
  workflow_id: string | null;
  workflow_name?: string | null;
}

/** The name servers before issue 42 gave every stored workflow's run: it names the interpreter, not the workflow. */
const INTERPRETER = 'runledger.stored';

let names: Promise<Map<string, string>> | null = null;

/** Stored workflows' names by id, read once per page load (a failed read is tried again on the next call). */
function storedNames(): Promise<Map<string, string>> {
  if (!names) {
    names = (async () => {
      const map = new Map<string, string>();
      // 20 pages of 100 at most: past 2,000 workflows a run shows its id
      for (let key: string | null = null, i = 0; i < 20; i++) {
        const page: { workflows: Array<{ id: string; name: string }>; last_key: string | null } = await api(
          `/workflows?limit=100${key ? `&last_key=${encodeURIComponent(key)}` : ''}`,
        );
        for (const w of page.workflows) map.set(w.id, w.name);
        key = page.last_key;
        if (!key) break;
      }
      return map;
    })().catch((error) => {
      names = null;
      throw error;
    });
  }
  return names;
}

/** The name a record carries itself, if any: `workflow_name`, or `workflow` when the server puts the stored workflow's name there. */
export function ownName(r: WorkflowOf): string | null {
  if (r.workflow_name) return r.workflow_name;
  return r.workflow && r.workflow !== INTERPRETER && r.workflow !== r.workflow_id ? r.workflow : null;
}

/**
 * Stored workflows' names for `records`, by id: what the records carry, else one read of `/workflows`
 * (only when some record lacks its name). An id with no name known stays out of the map.
 */
export function useWorkflowNames(records: WorkflowOf[] | undefined): Map<string, string> {
  const [found, setFound] = useState<Map<string, string>>(new Map());
  const missing = (records ?? []).some((r) => r.workflow_id && !ownName(r) && !found.has(r.workflow_id));
  useEffect(() => {
    if (!missing) return;
    let live = true;
    storedNames().then(
      (map) => live && setFound(map),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [missing]);
  const map = new Map(found);
  for (const r of records ?? []) {
    const own = ownName(r);
    if (r.workflow_id && own) map.set(r.workflow_id, own);
  }
  return map;
}

/** A stored workflow by its name (the id in the tooltip and for screen readers), linked to its page; its id when no name is known. */
export function StoredWorkflow({ id, names }: { id: string; names: Map<string, string> }) {
  const name = names.get(id);
  return (
    <Link
      to={`/workflows/${encodeURIComponent(id)}`}
      class={name ? 'workflow-name' : 'mono'}
      title={id}
      data-workflow-id={id}
    >
      {name ?? id}
    </Link>
  );
}
