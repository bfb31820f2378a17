import { describe, expect, it } from 'vitest';
import {
  ApiConventionsError,
  ConfigurationError,
  configurationErrorCodes,
  invalidRequestErrorCodes,
  isApiConventionsError,
  isConfigurationError,
} from '../src/index.js';

describe('errors', () => {
  it('pins the catalogue of configuration error codes', () => {
    expect([...configurationErrorCodes]).toEqual([
      'invalid_limit',
      'invalid_duration',
      'invalid_rate',
      'invalid_policy',
      'duplicate_policy_name',
      'invalid_option',
      'invalid_cost',
      'cost_above_limit',
      'invalid_override',
      'unknown_preset',
      'invalid_route_pattern',
      'invalid_route_rule',
      'invalid_cursor_state',
      'invalid_event_catalog',
      'invalid_subscription',
      'duplicate_subscription_id',
      'invalid_header_name',
      'invalid_tracking_id',
      'invalid_redis_client',
      'invalid_webhook_secret',
      'invalid_address_allow_list',
      'invalid_webhook_signing_key',
      'invalid_webhook_public_key',
      'unsupported_runtime',
    ]);
  });

  it('pins the catalogue of invalid request error codes', () => {
    expect([...invalidRequestErrorCodes]).toEqual([
      'invalid_request',
      'invalid_client_id',
      'invalid_account_code',
      'invalid_account_type',
      'invalid_method',
      'invalid_path',
      'invalid_event',
      'invalid_idempotency_key',
      'idempotency_key_reused',
    ]);
  });

  it('sets name, code, message and cause', () => {
    const cause = new Error('root');
    const error = new ConfigurationError('invalid_limit', 'limit must be >= 1', { cause });
    expect(error).toBeInstanceOf(ApiConventionsError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ConfigurationError');
    expect(error.code).toBe('invalid_limit');
    expect(error.message).toBe('limit must be >= 1');
    expect(error.cause).toBe(cause);
  });

  it('guards recognise errors from another copy of the package by their registered brand', () => {
    const foreign = Object.assign(new Error('x'), {
      name: 'ConfigurationError',
      code: 'invalid_limit',
      [Symbol.for('api-conventions.error')]: true,
    });
    expect(isApiConventionsError(foreign)).toBe(true);
    expect(isConfigurationError(foreign)).toBe(true);
    expect(isApiConventionsError(new Error('x'))).toBe(false);
    expect(isApiConventionsError({ code: 'invalid_limit' })).toBe(false);
    expect(isApiConventionsError(null)).toBe(false);
    expect(isConfigurationError(new ApiConventionsError('other', 'x'))).toBe(false);
  });
});
