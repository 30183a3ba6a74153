import { describe, expect, it } from 'vitest';
import { holds, ROLES, type Role } from './actor.js';

const actor = (...roles: Role[]) => ({ key: 'k', roles });

describe('holds', () => {
  it('gives admin every role', () => {
    for (const role of ROLES) expect(holds(actor('admin'), role)).toBe(true);
  });

  it('lets every role read, and do only its own work', () => {
    for (const role of ROLES.filter((r) => r !== 'admin')) {
      expect(holds(actor(role), 'viewer')).toBe(true);
      for (const other of ROLES)
        if (other !== role && other !== 'viewer') expect(holds(actor(role), other)).toBe(false);
    }
    expect(holds(actor('operator', 'approver'), 'approver')).toBe(true);
    expect(holds(actor(), 'viewer')).toBe(false);
  });
});
