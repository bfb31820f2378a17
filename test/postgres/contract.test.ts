/**
 * The PostgreSQL repository, on a real server and on PGlite, against the repository contract and
 * the account-isolation property, as every repository is: the same suite as the memory repository.
 * On PGlite once more with its secrets encrypted through WebCrypto (aesGcmSecretCipherAsync), whose
 * encrypt and decrypt the repository awaits.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { aesGcmSecretCipherAsync } from '../../src/postgres/index.js';
import { subscriptionRepositoryContract } from '../support/subscription-repository-contract.js';
import { accountIsolationProperty } from '../support/subscription-repository-property.js';
import { DATABASES, TestDatabases } from './databases.js';

const databases = new TestDatabases();
beforeAll(() => databases.start());
afterAll(() => databases.stop());

for (const name of DATABASES) {
  // Each open is a fresh schema of its own: an empty repository, as the contract asks.
  const open = async () => {
    const repository = await databases.open(name);
    return { repository, close: () => repository.close() };
  };
  subscriptionRepositoryContract(name === 'pg' ? 'PostgreSQL' : 'PGlite', open);
  accountIsolationProperty(name === 'pg' ? 'PostgreSQL' : 'PGlite', open);
}

const cipher = aesGcmSecretCipherAsync({ keys: [{ id: 'contract', key: randomBytes(32) }] });
const openWithCipher = async () => {
  const repository = await databases.open('pglite', { cipher });
  return { repository, close: () => repository.close() };
};
subscriptionRepositoryContract('PGlite, secrets through aesGcmSecretCipherAsync', openWithCipher);
