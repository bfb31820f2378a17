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
      `${host === address ? `The address ${address}` : `The host ${host} resolves to ${address}, which`} is not public (${range} range); webhooks are only sent to public addresses. ${advice(host, address)}`,
    );
    this.name = 'ForbiddenAddressError';
    this.host = host;
    this.address = address;
    this.range = range;
  }
}

// A local receiver needs its address in two allow-lists; naming one only moves the refusal.
function advice(host: string, address: string): string {
  const connect = `\`delivery: { transport: httpTransport({ allow: ['${address}'] }) }\` (where deliveries connect)`;
  const check = `\`endpointUrl: { allow: ['${address}'] }\` (where subscriptions are checked)`;
  return host === address
    ? `To deliver to it (tests, a private network), allow it in both places: ${connect} and ${check}.`
    : `To deliver to it (tests, a private network), allow it where deliveries connect: ${connect}; a subscription that names the address itself needs ${check} too.`;
}
