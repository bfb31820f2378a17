/** The error of a delivery whose host is or resolves to a forbidden address. @module */
import { ApiConventionsError } from './api-conventions-error.js';

/** Thrown (as a connection error) when a host is or resolves to a forbidden address. */
export class ForbiddenAddressError extends ApiConventionsError {
  declare readonly code: 'forbidden_address';
  /** The host of the endpoint. */
  readonly host: string;
  /** The address refused. */
  readonly address: string;
  /** Its range. */
  readonly range: string;

  /**
   * @param host - the host of the endpoint
   * @param address - the address refused
   * @param range - its range
   */
  constructor(host: string, address: string, range: string) {
    super(
      'forbidden_address',
      `${host === address ? `The address ${address}` : `The host ${host} resolves to ${address}, which`} is not public (${range} range); webhooks are only sent to public addresses. Allow it explicitly for tests or a private deployment.`,
    );
    this.name = 'ForbiddenAddressError';
    this.host = host;
    this.address = address;
    this.range = range;
  }
}
