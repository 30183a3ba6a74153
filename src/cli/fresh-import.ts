import { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Imports `file` afresh, with the user's files it imports (not the packages in node_modules): tsx
 * gives each ES module import a namespace of its own, so its graph is loaded again; CommonJS files
 * (a .ts file in a package without `"type": "module"`) share require's cache, so the entries under
 * the file's folder are dropped from it first. Each import leaves its modules in memory: meant for
 * `runledger dev`, where a few hundred reloads a day cost little.
 *
 * @example const values = await loadModule('--workflows', './flows.ts', false, freshImport);
 */
export async function freshImport(file: string): Promise<Record<string, unknown>> {
  const { tsImport } = await import('tsx/esm/api');
  const cache = createRequire(import.meta.url).cache;
  const root = dirname(file) + sep;
  for (const key of Object.keys(cache))
    if (key.startsWith(root) && !key.includes(`${sep}node_modules${sep}`)) delete cache[key];
  return tsImport(pathToFileURL(file).href, { parentURL: import.meta.url });
}
