// The part of qlobber's API the webhook benchmark uses (qlobber ships no types).
declare module 'qlobber' {
  export interface QlobberOptions {
    separator?: string;
    wildcard_one?: string;
    wildcard_some?: string;
  }
  export class QlobberDedup<V = unknown> {
    constructor(options?: QlobberOptions);
    add(topic: string, value: V): this;
    remove(topic: string, value?: V): this;
    match(topic: string): Set<V>;
  }
}
