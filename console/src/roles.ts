import type { Role } from './session';

/**
 * The role order of the API (docs/api-conventions.md "Roles"). The console only uses it to hide or
 * disable what a role cannot do; the server checks every call (a 403 is shown as it comes).
 */
const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

export const atLeast = (role: Role | undefined, min: Role) => role !== undefined && RANK[role] >= RANK[min];

export const ROLES: Role[] = ['owner', 'admin', 'member', 'viewer'];
