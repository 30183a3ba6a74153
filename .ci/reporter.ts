import { mkdirSync, writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestCase, TestModule } from 'vitest/node';

/**
 * Writes two files for the CI summary:
 * - .ci/out/flaky.txt: the tests that failed and then passed on their retry, one per line;
 * - .ci/out/unhandled.txt: the errors no test caught (vitest fails the run for them, but its JSON
 *   report has no place for them), one per line, so the summary counts and names them.
 */
export default class CiReporter implements Reporter {
  private readonly flaky: string[] = [];

  onTestCaseResult(test: TestCase): void {
    const diagnostic = test.diagnostic();
    if (diagnostic?.flaky)
      this.flaky.push(
        `${test.module.relativeModuleId} > ${test.fullName} (passed on try ${diagnostic.retryCount + 1})`,
      );
  }

  onTestRunEnd(_modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    mkdirSync('.ci/out', { recursive: true });
    writeFileSync('.ci/out/flaky.txt', this.flaky.map((line) => `${line}\n`).join(''));
    writeFileSync('.ci/out/unhandled.txt', unhandledErrors.map((error) => `${describe(error)}\n`).join(''));
  }
}

function describe(error: SerializedError): string {
  const where = [error.VITEST_TEST_PATH, error.VITEST_TEST_NAME].filter(Boolean).join(' > ');
  const first = (error.stack ?? '').split('\n').find((line) => line.trim().startsWith('at '));
  return `${where || 'outside any test'}: ${error.name ?? 'Error'}: ${String(error.message ?? '').split('\n')[0]}${first ? ` (${first.trim()})` : ''}`;
}
