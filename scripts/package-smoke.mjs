// Run from a scratch project that has the packed tarball installed: the public API works end to end.
import { createRequire } from 'node:module';
import * as esm from 'api-conventions';

const require = createRequire(`${process.cwd()}/`);
const cjs = require('api-conventions');

for (const [label, lib] of [
  ['esm', esm],
  ['cjs', cjs],
]) {
  const problem = lib.problemDetails({ code: 'x', title: 'X', status: 400 });
  if (problem.status !== 400 || problem.type !== `${lib.DEFAULT_PROBLEM_TYPE_BASE}x`) {
    throw new Error(`${label}: problemDetails`);
  }
}
