import { mkdirSync, writeFileSync } from 'node:fs';
import type { Reporter, TestCase } from 'vitest/node';

/** Writes .ci/out/flaky.txt: the tests that failed and then passed on their retry, one per line. */
export default class FlakyReporter implements Reporter {
  private readonly flaky: string[] = [];

  onTestCaseResult(test: TestCase): void {
    const diagnostic = test.diagnostic();
    if (diagnostic?.flaky) this.flaky.push(`${test.module.relativeModuleId} > ${test.fullName} (passed on try ${diagnostic.retryCount + 1})`);
  }

  onTestRunEnd(): void {
    mkdirSync('.ci/out', { recursive: true });
    writeFileSync('.ci/out/flaky.txt', this.flaky.map((line) => `${line}\n`).join(''));
  }
}
