import { type Dirent, type FSWatcher, readdirSync, watch } from 'node:fs';
import { extname, join } from 'node:path';

/** Files whose change counts: code, not the database or editors' swap files. */
const CODE = new Set(['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.json']);
/** An editor's save is often several writes (truncate, write, rename): one call after the last. */
const DEBOUNCE_MS = 150;
/** Past this many folders the tree holds generated files, not the code being edited: the rest go unwatched. */
const MAX_FOLDERS = 2_000;

/**
 * Calls `onChange` once a burst of changes to code files in `root` or its folders has settled (not
 * node_modules, not dot folders such as .git or .runledger), one call at a time. Each folder is
 * watched on its own, not recursively: on Linux, Node 20's recursive watch watches each file and
 * loses one an editor saves by renaming a new file over it; a folder's watch sees that rename.
 * Returns the function that stops watching.
 *
 * @example const stop = watchFolder('./src', async () => console.log('changed'));
 */
export function watchFolder(root: string, onChange: () => Promise<void>): () => void {
  const watchers = new Map<string, FSWatcher>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const changed = () => {
    running = running.then(() => {
      sync();
      return onChange();
    });
  };
  const sync = () => {
    const folders = new Set(foldersUnder(root));
    for (const [folder, watcher] of watchers)
      if (!folders.has(folder)) {
        watcher.close();
        watchers.delete(folder);
      }
    for (const folder of folders) {
      if (watchers.has(folder)) continue;
      const watcher = watch(folder, (_event, file) => {
        if (!file || !CODE.has(extname(file))) return;
        clearTimeout(timer);
        timer = setTimeout(changed, DEBOUNCE_MS);
      });
      // a folder removed between the listing and the watch: the next listing forgets it
      watcher.on('error', () => {});
      watchers.set(folder, watcher);
    }
  };
  sync();
  return () => {
    clearTimeout(timer);
    for (const watcher of watchers.values()) watcher.close();
    watchers.clear();
  };
}

function foldersUnder(root: string): string[] {
  const found = [root];
  for (let i = 0; i < found.length && found.length < MAX_FOLDERS; i++) {
    let entries: Dirent[];
    try {
      entries = readdirSync(found[i]!, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries)
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.'))
        found.push(join(found[i]!, entry.name));
  }
  return found;
}
