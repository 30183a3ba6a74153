import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard, built into dist/ui and served by `runledger serve` at /ui. No plugin: Vite's own
// transformer compiles the JSX for Preact.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    reportCompressedSize: true,
  },
  logLevel: 'warn',
});
