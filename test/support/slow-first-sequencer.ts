/**
 * vitest's order of test files, with the few that take longest started first. Without timings of
 * its own (a fresh checkout, as in CI) vitest starts the largest files first, and these are small
 * files that run long: started last, one of them would run alone at the end while a core idles.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The longest files, longest first (measured on a 2-core machine, `vitest run --reporter=json`):
 * the files that start processes, servers or databases, and the longest properties.
 */
const slowest = [
  'test/webhooks/service/kill.test.ts',
  'test/postgres/contract.test.ts',
  'test/postgres/server.test.ts',
  'test/examples/restart.test.ts',
  'test/docs-snippets.test.ts',
  'test/webhooks/service/kill-bullmq.test.ts',
  'test/examples/reference-service.test.ts',
  'test/postgres/data-folder-lock.test.ts',
  'test/queue-redis/redis-delivery-queue.test.ts',
  'test/redis/equivalence-model.test.ts',
  'test/postgres/group-commit.test.ts',
  'test/limits/limiter.test.ts',
  'test/postgres/secrets.test.ts',
  'test/webhooks/service/replay-pacing.test.ts',
  'test/examples/walk-through.test.ts',
  'test/redis/overrides-processes.test.ts',
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
