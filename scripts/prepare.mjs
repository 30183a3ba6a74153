// `npm run prepare` (npm ci, npm pack, and npx in this folder): build dist/ and the dashboard, unless
// they were built from exactly these sources. npx runs this on its first `npx runledger` in a clone (it
// installs the folder as a link into its own cache, which runs the link's prepare): building again there
// kept that first command silent for 19-33 s; skipping an up-to-date build makes it ~2 s.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const INPUTS = ['src', 'ui', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
const OUTPUTS = ['dist/index.js', 'dist/cli/main.js', 'dist/ui/index.html'];
// outside dist/, so the stamp is never packed, and a removed dist/ or node_modules/ means a build
const stamp = join(root, 'node_modules', '.cache', 'runledger', 'build-inputs');

/** One hash over the names and contents of every file the build reads. */
function inputsHash() {
  const hash = createHash('sha256');
  const add = (path) => {
    const full = join(root, path);
    if (!existsSync(full)) return;
    const entries = readdirSafe(full);
    if (entries === null) {
      hash.update(`${path}\0`).update(readFileSync(full)).update('\0');
      return;
    }
    for (const entry of entries.sort()) if (entry !== 'node_modules') add(join(path, entry));
  };
  for (const input of INPUTS) add(input);
  return hash.digest('hex');
}

function readdirSafe(path) {
  try {
    return readdirSync(path);
  } catch (error) {
    if (error.code === 'ENOTDIR') return null;
    throw error;
  }
}

const before = inputsHash();
const built =
  OUTPUTS.every((output) => existsSync(join(root, output))) &&
  existsSync(stamp) &&
  readFileSync(stamp, 'utf8') === before;
if (built && !process.argv.includes('--force')) {
  // stderr: `npm pack --json` prints its JSON on stdout, after this script's output
  console.error('runledger: dist/ is up to date with src/ and ui/ (npm run build to build anyway)');
} else {
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, before);
}
