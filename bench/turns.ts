/**
 * Handlers served in turns within one service: each turn of `sliceMs` goes to the next handler,
 * and each turn's requests, wall time and CPU time are counted to its handler. All of them then
 * meet the same moments of a shared machine, which moves the rates of separate runs by up to 40%.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A node:http request listener. */
export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** What a service taking turns reports of each handler. */
export interface TurnFigures {
  requestsPerSecond: number;
  cpuUsPerRequest: number;
  turns: number;
}

/** Serves handlers in turns; `serving()` is the index of the handler whose turn it is. */
export class Turns {
  private readonly totals;
  private current = 0;
  private requests = 0;
  private since = performance.now();
  private cpu = process.cpuUsage();

  constructor(
    private readonly names: readonly string[],
    private readonly handlers: readonly Handler[],
    sliceMs: number,
  ) {
    this.totals = handlers.map(() => ({ requests: 0, ms: 0, cpuUs: 0, turns: 0 }));
    setInterval(() => this.nextTurn(), sliceMs).unref();
  }

  /** The request listener: the handler whose turn it is answers. */
  readonly serve: Handler = (req, res) => {
    this.requests++;
    (this.handlers[this.current] as Handler)(req, res);
  };

  /** The index of the handler whose turn it is. */
  serving(): number {
    return this.current;
  }

  /** Each handler's figures since the last reset, by name. */
  figures(): Record<string, TurnFigures> {
    return Object.fromEntries(
      this.names.map((name, i) => {
        const t = this.totals[i]!;
        return [
          name,
          {
            requestsPerSecond: Math.round((t.requests * 1000) / Math.max(1, t.ms)),
            cpuUsPerRequest: t.cpuUs / Math.max(1, t.requests),
            turns: t.turns,
          },
        ];
      }),
    );
  }

  /** Forget the figures so far (the warm-up's). */
  reset(): void {
    for (const t of this.totals) Object.assign(t, { requests: 0, ms: 0, cpuUs: 0, turns: 0 });
  }

  private nextTurn(): void {
    const now = performance.now();
    const used = process.cpuUsage(this.cpu);
    const total = this.totals[this.current]!;
    total.requests += this.requests;
    total.ms += now - this.since;
    total.cpuUs += used.user + used.system;
    total.turns++;
    this.requests = 0;
    this.since = now;
    this.cpu = process.cpuUsage();
    this.current = (this.current + 1) % this.handlers.length;
  }
}
