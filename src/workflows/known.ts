import type { Secrets } from './secrets.js';

/**
 * The secret values as last read, for masking log lines synchronously: asking starts a refresh
 * when the last one is older than `maxAgeMs`, so a secret stored a moment ago is masked from the
 * next lines on. A failed read (a secret under another key) keeps the values read before.
 *
 * @example logEvents(engine.events, logger, knownSecrets(service.secrets))
 */
export function knownSecrets(secrets: Secrets, maxAgeMs = 5000): () => string[] {
  let values: string[] = [];
  let readAt = Number.NEGATIVE_INFINITY;
  let reading = false;
  return () => {
    if (!reading && Date.now() - readAt > maxAgeMs) {
      reading = true;
      readAt = Date.now();
      secrets
        .values()
        .then((found) => (values = Object.values(found)))
        .catch(() => {})
        .finally(() => (reading = false));
    }
    return values;
  };
}
