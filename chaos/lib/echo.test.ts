import { describe, expect, it } from 'vitest';
import { Echo } from './echo.js';
import { failures, emptyFigures, RECOVERY_LIMIT_SECONDS } from './figures.js';

describe('the echo server tally', () => {
  it('tells an effect repeated under another key (a duplicate) from one repeated under the same key, and names the missing', () => {
    const echo = new Echo();
    const receive = (effect: string, key: string | null) =>
      echo.receipts.push({ effect, key, authorization: null, at: 0 });
    receive('1:charge', 'k1');
    receive('1:charge', 'k1');
    receive('1:charge', 'k1');
    receive('2:charge', 'k2');
    receive('2:charge', 'k2-other');
    receive('3:charge', null);
    expect(echo.tally(['1:charge', '2:charge', '3:charge', '4:charge'])).toEqual({
      received: 6,
      duplicated: 1,
      sameKey: 2,
      missing: ['4:charge'],
    });
  });
});

describe('the figures a scenario fails on', () => {
  it('are every nonzero must-be-zero figure and a recovery over the limit, not same-key repeats', () => {
    const f = { ...emptyFigures(), sameKeyRepeats: 7, recoverySeconds: RECOVERY_LIMIT_SECONDS };
    expect(failures(f)).toEqual([]);
    expect(failures({ ...f, stuck: 2, http5xx: 1, recoverySeconds: RECOVERY_LIMIT_SECONDS + 0.1 })).toEqual([
      'stuck=2',
      'http5xx=1',
      `recovery ${RECOVERY_LIMIT_SECONDS + 0.1}s > ${RECOVERY_LIMIT_SECONDS}s`,
    ]);
  });
});
