import { iso } from '../../iso.js';
import type { SecretInfo } from '../../workflows/secrets.js';

/** A secret as the API shows it: its name and times, never its value (the `secretInfo` schema). */
export function secretRecord(s: SecretInfo): { name: string; created_at: string; updated_at: string } {
  return { name: s.name, created_at: iso(s.createdAt), updated_at: iso(s.updatedAt) };
}
