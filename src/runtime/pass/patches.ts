import type { Journal } from '../../journal/journal.js';
import { checkName } from '../../json.js';
import type { NewEvent, Store } from '../../storage/store.js';
import type { History } from './history.js';
import { RUN_VIEW, type RunView } from '../read/view.js';
import { RUN_EVENT } from '../events.js';

/** What `ctx.patched` needs of the pass. */
export interface PatchHost {
  history: History;
  /** The position of the run's own order reached so far in this pass. */
  position(): number;
  /** Journals with the pass's next write (a decision alone is worth no transaction). */
  defer(event: NewEvent): void;
  /** The run cannot go on with this code: its pass stops and is tried again later. */
  stop(reason: string): void;
}

/**
 * `ctx.patched` and `ctx.deprecatePatch`. A decision is made once per run and journaled
 * (`patch.recorded`); a run whose journal already holds calls past the current position went past
 * this point on code without the change, so it keeps the old branch. Nothing here takes a call
 * position, so wrapping new calls in `if (ctx.patched(…))` changes nothing for old runs' replay.
 */
export class Patches {
  private readonly decided = new Map<string, boolean>();

  constructor(private readonly host: PatchHost) {}

  patched(id: string): boolean {
    checkName('patched(id)', id, 200);
    const known = this.host.history.patches.get(id) ?? this.decided.get(id);
    if (known !== undefined) return known;
    const patched = this.host.history.reached <= this.host.position();
    this.decided.set(id, patched);
    this.host.defer({
      type: RUN_EVENT.patchRecorded,
      data: { id, patched, seq: this.host.position(), workflow: this.host.history.workflow },
    });
    return patched;
  }

  deprecatePatch(id: string): void {
    checkName('deprecatePatch(id)', id, 200);
    // decided as patched() would: runs that start on this code count as patched (for --needs-patch)
    if (!this.patched(id)) {
      this.host.stop(
        `run took the old branch of change '${id}', which this code no longer has: deploy code with ctx.patched('${id}') again (runledger runs list --needs-patch ${id})`,
      );
    }
  }
}

/** Where the first run to take each change's new branch is noted: runs started before it may still need the old one. */
export const PATCHES = 'patches';

export interface PatchSeen {
  /** When a run first took the new branch (ms): the change was deployed by then. */
  firstPatchedAt: number | null;
  workflows: string[];
}

/** Keeps `PATCHES` in step with the journal's `patch.recorded` events. */
export function projectPatches(journal: Journal): void {
  journal.project(RUN_EVENT.patchRecorded, async (event, tx) => {
    const data = event.data as { id: string; patched: boolean; workflow?: string };
    const seen = ((await tx.projectionGet({ name: PATCHES, key: data.id })) as PatchSeen | undefined) ?? {
      firstPatchedAt: null,
      workflows: [],
    };
    const workflows =
      data.workflow && !seen.workflows.includes(data.workflow) ? [...seen.workflows, data.workflow] : seen.workflows;
    const firstPatchedAt = seen.firstPatchedAt ?? (data.patched ? event.timestamp : null);
    if (workflows !== seen.workflows || firstPatchedAt !== seen.firstPatchedAt)
      await tx.projectionPut({ name: PATCHES, key: data.id, value: { firstPatchedAt, workflows } });
  });
}

const LIVE = ['pending', 'running', 'sleeping', 'waiting'];

/**
 * The runs that may still take the old branch of change `id`, so code without it (`deprecatePatch`)
 * would stop them: runs not ended that took the old branch, or that have not decided yet and
 * started before any run took the new one (they may be past the point on old code). Empty: the
 * old branch can go.
 */
export async function runsNeedingPatch(
  store: Store,
  id: string,
  options: { workflow?: string; limit?: number } = {},
): Promise<RunView[]> {
  const seen = ((await store.projectionGet({ name: PATCHES, key: id })) as PatchSeen | undefined) ?? {
    firstPatchedAt: null,
    workflows: [],
  };
  const workflows = options.workflow !== undefined ? [options.workflow] : seen.workflows;
  if (workflows.length === 0) return [];
  const limit = options.limit ?? 1000;
  const needing: RunView[] = [];
  let before: { createdAt: number; key: string } | undefined;
  for (;;) {
    const rows = await store.projectionListRecent({
      name: RUN_VIEW,
      limit: 200,
      where: [[{ field: 'status', in: LIVE }], [{ field: 'workflow', in: workflows }]],
      ...(before ? { before } : {}),
    });
    for (const row of rows) {
      const view = row.value as RunView;
      const decided = view.patches?.[id];
      if (
        decided === false ||
        (decided === undefined && (seen.firstPatchedAt === null || view.createdAt < seen.firstPatchedAt))
      )
        needing.push(view);
      if (needing.length >= limit) return needing;
    }
    if (rows.length < 200) return needing;
    const last = rows.at(-1)!.value as RunView;
    before = { createdAt: last.createdAt, key: rows.at(-1)!.key };
  }
}
