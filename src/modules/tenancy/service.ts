import type { Db } from '../../db/pool.js';
import { withTx } from '../../db/pool.js';
import { roleAtLeast } from '../../http/auth.js';
import { AppError, forbidden } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import type { IdentityStore } from '../identity/store.js';
import type { AuthenticatedUser } from '../identity/service.js';
import type { Role, TenancyStore } from './store.js';

export function createTenancyService({
  db,
  store,
  users,
  activity,
}: {
  db: Db;
  store: TenancyStore;
  users: IdentityStore;
  activity: ActivityStore;
}) {
  async function requireOrgRole(orgId: string, userId: string, min: Role): Promise<Role> {
    const role = await store.roleOf(orgId, userId);
    if (!role) throw forbidden('Not a member of this organization');
    if (!roleAtLeast(role, min)) throw forbidden(`This action needs the ${min} role or higher`);
    return role;
  }

  return {
    async me(user: AuthenticatedUser) {
      return {
        id: user.id,
        email: user.email,
        name: user.name,
        super_admin: user.superAdmin,
        organizations: await store.membershipsOf(user.id),
      };
    },

    createOrganization(user: AuthenticatedUser, name: string) {
      return withTx(db, (tx) => store.insertOrganization(name, user.id, tx));
    },

    async createApp(user: AuthenticatedUser, orgId: string, name: string) {
      await requireOrgRole(orgId, user.id, 'admin');
      const created = await withTx(db, (tx) => store.insertApp(orgId, name, tx));
      await activity.record(
        { tenantId: orgId, appId: created.id },
        {
          entityType: 'app',
          entityId: created.id,
          action: 'created',
          description: `App "${name}" created`,
          actorUserId: user.id,
        },
      );
      return created;
    },

    async addMember(user: AuthenticatedUser, orgId: string, input: { email: string; role: Role }) {
      const callerRole = await requireOrgRole(orgId, user.id, 'admin');
      // Only an owner can hand out (or take away) ownership.
      if (input.role === 'owner' && callerRole !== 'owner') throw forbidden('Only an owner can add owners');
      const member = await users.findUserByEmail(input.email);
      if (!member) throw new AppError('not_found', 'No user with this email; they must sign up first');
      const existing = await store.roleOf(orgId, member.id);
      if (existing === 'owner' && callerRole !== 'owner') throw forbidden('Only an owner can change an owner');
      await store.upsertMember(orgId, member.id, input.role);
      return { user_id: member.id, email: member.email, role: input.role };
    },

    async members(user: AuthenticatedUser, orgId: string) {
      await requireOrgRole(orgId, user.id, 'viewer');
      return store.membersOf(orgId);
    },

    async removeMember(user: AuthenticatedUser, orgId: string, userId: string) {
      const callerRole = await requireOrgRole(orgId, user.id, 'admin');
      const role = await store.roleOf(orgId, userId);
      if (!role) throw new AppError('not_found', 'No such member');
      if (role === 'owner' && callerRole !== 'owner') throw forbidden('Only an owner can remove an owner');
      // The last owner stays: an organization nobody can manage could not be recovered.
      if (!(await store.removeMember(orgId, userId)))
        throw new AppError('conflict', 'The last owner cannot be removed');
    },
  };
}

export type TenancyService = ReturnType<typeof createTenancyService>;
