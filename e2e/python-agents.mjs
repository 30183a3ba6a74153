// The --agents module of e2e/python-agent.int.test.ts: the Python agent of examples/python/agent_000.py,
// an HTTP agent at the URL the test hands over in RUNLEDGER_TEST_PY_AGENT_URL (it listens on a free port).
import { defineAgent } from '../dist/index.js';

const url = process.env.RUNLEDGER_TEST_PY_AGENT_URL;
if (!url) throw new Error('RUNLEDGER_TEST_PY_AGENT_URL: set it to the Python agent URL (http://127.0.0.1:<port>/)');

export const py000 = defineAgent('py-000', { url, maxWait: '1m' });

// the same agent with a short maxWait: the kill -9 test's session times out once its agent is gone
export const py000Brief = defineAgent('py-000-brief', { url, maxWait: '4s' });
