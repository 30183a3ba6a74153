import { writeFileSync } from 'node:fs';
import { apiReport } from './api-report.js';

writeFileSync(new URL('../docs/api.md', import.meta.url), apiReport());
console.log('wrote docs/api.md');
