/**
 * Node's modules read where the runtime has them: Node's own here, nothing (and no failure) where
 * `process.getBuiltinModule` is missing, answers nothing or throws, and a typed refusal for what
 * needs one.
 */
import * as diagnosticsChannelModule from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigurationError } from '../../src/errors/index.js';
import {
  diagnosticsChannel,
  nodeBuiltin,
  nodeCrypto,
  requireNodeBuiltin,
} from '../../src/internal/node-builtin.js';
import { thrown } from '../support/thrown.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('nodeBuiltin', () => {
  it("gives Node's module on Node", () => {
    expect(nodeBuiltin('node:diagnostics_channel')?.channel).toBe(diagnosticsChannelModule.channel);
    expect(diagnosticsChannel('api-conventions:test')).toBe(
      diagnosticsChannelModule.channel('api-conventions:test'),
    );
  });

  it('gives nothing where getBuiltinModule answers nothing or throws, and channels that publish nothing', () => {
    for (const answer of [
      () => undefined,
      () => {
        throw new Error('no such module');
      },
    ]) {
      vi.spyOn(process, 'getBuiltinModule').mockImplementation(answer as never);
      expect(nodeBuiltin('node:crypto')).toBeUndefined();
      const channel = diagnosticsChannel('api-conventions:test');
      expect(channel.hasSubscribers).toBe(false);
      expect(() => channel.publish({})).not.toThrow();
      vi.restoreAllMocks();
    }
  });

  it('refuses what needs a module the runtime lacks with unsupported_runtime, saying what to use instead', () => {
    vi.spyOn(process, 'getBuiltinModule').mockImplementation((() => undefined) as never);
    const error = thrown(() =>
      requireNodeBuiltin('node:http', 'httpTransport', 'use fetchTransport()'),
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error).toMatchObject({
      code: 'unsupported_runtime',
      message:
        'httpTransport needs node:http, which this runtime does not have: use fetchTransport().',
    });
    expect(thrown(() => nodeCrypto('A test'))).toMatchObject({ code: 'unsupported_runtime' });
  });
});
