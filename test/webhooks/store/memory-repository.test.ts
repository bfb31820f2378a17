/**
 * The in-memory subscription repository against the repository contract and the
 * account-isolation property, as every repository is.
 */
import { MemorySubscriptionRepository } from '../../../src/index.js';
import { subscriptionRepositoryContract } from '../../support/subscription-repository-contract.js';
import { accountIsolationProperty } from '../../support/subscription-repository-property.js';

const open = async () => ({
  repository: new MemorySubscriptionRepository(),
  close: async () => {},
});

subscriptionRepositoryContract('memory', open);
accountIsolationProperty('memory', open);
