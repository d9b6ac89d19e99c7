import { Algorithm, hash, verify } from '@node-rs/argon2';
import { AppError } from '../../http/errors.js';
import type { IdentityStore, UserRow } from './store.js';
import type { TokenService, VerifiedToken } from './tokens.js';

const ARGON = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export interface AuthenticatedUser {
  id: string;
  email: string;
  name: string | null;
  superAdmin: boolean;
}

const publicUser = (u: UserRow) => ({ id: u.id, email: u.email, name: u.name });

export function createIdentityService({ store, tokens }: { store: IdentityStore; tokens: TokenService }) {
  // Verifying against a real hash for unknown emails keeps login timing the same for both cases.
  const dummyHash = hash('timing-equaliser-password', ARGON);

  async function signupEnabled(): Promise<boolean> {
    return (await store.getPlatformSetting<boolean>('signup_enabled')) !== false;
  }

  return {
    signupEnabled,

    async setSignupEnabled(enabled: boolean): Promise<void> {
      await store.setPlatformSetting('signup_enabled', enabled);
    },

    async signup(input: { email: string; password: string; name?: string }) {
      if (!(await signupEnabled())) throw new AppError('signup_disabled', 'Signup is disabled on this server');
      const passwordHash = await hash(input.password, ARGON);
      const user = await store.insertUser(input.email.trim(), input.name?.trim() || null, passwordHash);
      if (!user) throw new AppError('email_taken', 'An account with this email already exists');
      return { ...(await tokens.issue(user)), user: publicUser(user) };
    },

    async login(input: { email: string; password: string }) {
      const user = await store.findUserByEmail(input.email.trim());
      const ok = user?.password_hash
        ? await verify(user.password_hash, input.password)
        : (await verify(await dummyHash, input.password), false);
      if (!user || !ok) throw new AppError('invalid_credentials', 'Email or password is incorrect');
      return { ...(await tokens.issue(user)), user: publicUser(user) };
    },

    /** Resolves a bearer token to our user; users of a trusted external issuer are provisioned on first sight. */
    async authenticate(token: string): Promise<AuthenticatedUser> {
      const claims: VerifiedToken = await tokens.verify(token);
      let user: UserRow | null;
      if (claims.external) {
        user =
          (await store.findUserByEmail(claims.email!)) ??
          (await store.insertUser(claims.email!, null, null)) ??
          (await store.findUserByEmail(claims.email!));
      } else {
        user = await store.findUserById(claims.sub);
      }
      if (!user) throw new AppError('invalid_credentials', 'The token names an unknown user');
      return { id: user.id, email: user.email, name: user.name, superAdmin: claims.superAdmin };
    },
  };
}

export type IdentityService = ReturnType<typeof createIdentityService>;
