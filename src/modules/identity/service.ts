import { Algorithm, hash, verify } from '@node-rs/argon2';
import { AppError } from '../../http/errors.js';
import type { RefreshTokens } from './refresh.js';
import type { SignInThrottle } from './sign-in-throttle.js';
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

export function createIdentityService({
  store,
  tokens,
  throttle,
  refresh,
}: {
  store: IdentityStore;
  tokens: TokenService;
  throttle: SignInThrottle;
  refresh: RefreshTokens;
}) {
  // Verifying against a real hash for unknown emails keeps login timing the same for both cases.
  const dummyHash = hash('timing-equaliser-password', ARGON);

  async function signupEnabled(): Promise<boolean> {
    return (await store.getPlatformSetting<boolean>('signup_enabled')) !== false;
  }

  // An ID token for the console, and a refresh family that renews it (docs/auth.md).
  async function signedIn(user: UserRow) {
    const [id, grant] = await Promise.all([tokens.issue(user), refresh.start(user.id)]);
    return { ...id, user: publicUser(user), refresh: grant };
  }

  return {
    signupEnabled,

    async setSignupEnabled(enabled: boolean): Promise<void> {
      await store.setPlatformSetting('signup_enabled', enabled);
    },

    /** `ip`: the client's address, for the signup allowance per address (checked before the hash). */
    async signup(input: { email: string; password: string; name?: string }, ip: string) {
      if (!(await signupEnabled())) throw new AppError('signup_disabled', 'Signup is disabled on this server');
      await throttle.signup(ip);
      const passwordHash = await hash(input.password, ARGON);
      const user = await store.insertUser(input.email.trim(), input.name?.trim() || null, passwordHash);
      if (!user) throw new AppError('email_taken', 'An account with this email already exists');
      return signedIn(user);
    },

    /** The throttle is asked first: a refused attempt costs no hash, and an unknown email is counted like a known one. */
    async login(input: { email: string; password: string }, ip: string) {
      const attempt = await throttle.signIn(input.email, ip);
      const user = await store.findUserByEmail(input.email.trim());
      const ok = user?.password_hash
        ? await verify(user.password_hash, input.password)
        : (await verify(await dummyHash, input.password), false);
      if (!user || !ok) throw new AppError('invalid_credentials', 'Email or password is incorrect');
      await attempt.succeeded();
      return signedIn(user);
    },

    /** A new ID token for the refresh token's user, and the token's successor. */
    async refresh(refreshToken: string | undefined) {
      const { userId, grant } = await refresh.rotate(refreshToken);
      const user = await store.findUserById(userId);
      if (!user) throw new AppError('invalid_credentials', 'The refresh token names an unknown user');
      return { ...(await tokens.issue(user)), user: publicUser(user), refresh: grant };
    },

    logout: (refreshToken: string) => refresh.revoke(refreshToken),

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
