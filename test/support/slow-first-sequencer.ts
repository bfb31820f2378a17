/**
 * vitest's order of test files, with the few that take longest started first. Without timings of
 * its own (a fresh checkout, as in CI) vitest starts the largest files first, and these are small
 * files that run long: started last, one of them would run alone at the end while a core idles.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The longest files, longest first (measured on a 2-core machine). */
const slowest = [
  'test/redis/equivalence-model.test.ts',
  'test/redis/distributed.test.ts',
  'test/redis/equivalence.test.ts',
  'test/queue-redis/redis-delivery-queue.test.ts',
  'test/examples/service.test.ts',
  'test/examples/hostile-input.test.ts',
  'test/webhooks/service/instances.test.ts',
  'test/webhooks/service/instances-bullmq.test.ts',
  'test/postgres/contract.test.ts',
];

function rank(file: TestSpecification): number {
  const index = slowest.findIndex((path) => file.moduleId.endsWith(path));
  return index === -1 ? slowest.length : index;
}

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array sort is stable: the other files keep vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
