import { writeFileSync } from 'node:fs';
import { cliProgram } from '../src/cli/main.js';
import { configurationMarkdown } from '../src/settings-docs.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationMarkdown(cliProgram()));
console.log('wrote docs/configuration.md');
