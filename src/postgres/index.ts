/**
 * The subscription repository on PostgreSQL:
 * `import { PostgresSubscriptionRepository } from 'api-conventions/postgres'`. `pg` and
 * `@electric-sql/pglite` are optional peer dependencies: the caller passes a Pool or a PGlite
 * instance, and the package never imports either.
 * @module
 */

export type { DataFolderErrorCode, DataFolderErrorOptions } from '../errors/data-folder-error.js';
export { DataFolderError, dataFolderErrorCodes } from '../errors/data-folder-error.js';
export type {
  SecretCipherErrorCode,
  SecretCipherErrorOptions,
} from '../errors/secret-cipher-error.js';
export {
  isSecretCipherError,
  SecretCipherError,
  secretCipherErrorCodes,
} from '../errors/secret-cipher-error.js';
export type {
  AesGcmSecretCipherOptions,
  AsyncSecretCipher,
  SecretCipher,
  SecretKey,
  SyncSecretCipher,
} from '../webhooks/signing/secret-cipher.js';
export { aesGcmSecretCipher, aesGcmSecretCipherAsync } from '../webhooks/signing/secret-cipher.js';
export type { DataFolderLock } from './data-folder-lock.js';
export { lockDataFolder } from './data-folder-lock.js';
export type { Migration, MigrationReport } from './migrations.js';
export { MIGRATIONS } from './migrations.js';
export { PostgresSubscriptionRepository } from './postgres-subscription-repository.js';
export type {
  GroupCommitOptions,
  PostgresRepositoryOptions,
} from './repository-options.js';
export type {
  SqlClient,
  SqlDatabase,
  SqlEmbedded,
  SqlNotification,
  SqlPool,
  SqlResult,
} from './sql-database.js';
