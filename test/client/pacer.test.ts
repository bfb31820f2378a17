/** The pacer on a fake clock: never over a limit (against the exact oracle), order, aborts, margin. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPacer, createRetryingFetch, type Sleep } from '../../src/client/index.js';
import {
  concurrency,
  createLimiter,
  developmentPreset,
  FakeClock,
  isConfigurationError,
  isInvalidRequestError,
  type LimitPreset,
  livePreset,
  type Policy,
  presets,
  rate,
  resourceRules,
  window,
} from '../../src/index.js';
import { arbitraryGaps, burstyGaps } from '../support/arrivals.js';
import { FakeTimers } from '../support/fake-timers.js';
import { ExactOracle } from '../support/oracle.js';
import {
  earliestSchedule,
  excess,
  type SpecLimit,
  SpecServer,
  specLimits,
  withMargin,
} from '../support/spec-limits.js';
import { thrown } from '../support/thrown.js';

const target = { method: 'GET', url: 'https://api.test/booking/v1/reservations' };

/**
 * A sleep that moves the fake clock: waiting takes no real time. Like a timer, it wakes in a later
 * turn of the event loop, after everything already due has run.
 */
const movingSleep = (clock: FakeClock) => (ms: number) =>
  new Promise<void>((resolve) =>
    setImmediate(() => {
      clock.advance(ms);
      resolve();
    }),
  );

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const presetOf = (policies: Policy[]): LimitPreset => ({ name: 'custom', policies });

describe('createPacer', () => {
  it('never sends more than any time policy of the preset admits, for any arrival pattern (checked by the exact oracle)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(presets.live, presets.development, presetOf([window(3, '1s'), rate(2, 2)])),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 300 }),
        fc.integer({ min: 0, max: 100 }),
        async (preset, gaps, margin) => {
          const clock = new FakeClock(0);
          const pacer = createPacer({
            preset,
            clock,
            sleep: movingSleep(clock),
            safetyMarginMs: margin,
          });
          const sent: number[] = [];
          const turns: Promise<void>[] = [];
          let arrival = 0;
          for (const gap of gaps) {
            arrival += gap;
            // Let what is due run first; a request arrives at its time, or later if the pacer's
            // own wait already moved the clock past it.
            await nextTurn();
            if (clock.now() < arrival) clock.set(arrival);
            turns.push(
              pacer.acquire(target).then((done) => {
                sent.push(clock.now());
                done();
              }),
            );
          }
          await Promise.all(turns);
          const timed = preset.policies.filter((p) => p.kind !== 'concurrency');
          const oracle = new ExactOracle(timed);
          for (const t of sent) expect(oracle.decide(t).allowed, `send at ${t}`).toBe(true);
          expect(sent).toHaveLength(gaps.length);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("keeps at most the throttle's number in flight, and serves waiters first in, first out", async () => {
    const clock = new FakeClock(0);
    const pacer = createPacer({
      preset: presetOf([window(1000, '1s'), concurrency(2)]),
      clock,
      sleep: movingSleep(clock),
    });
    const order: number[] = [];
    const ends: Array<() => void> = [];
    const turns = [0, 1, 2, 3, 4].map((i) =>
      pacer.acquire(target).then((done) => {
        order.push(i);
        ends.push(done);
      }),
    );
    await Promise.resolve();
    expect(pacer.inFlight).toBe(2);
    expect(pacer.waiting).toBe(3);
    while (ends.length > 0 || pacer.waiting > 0) {
      await new Promise<void>((resolve) => queueMicrotask(resolve));
      const end = ends.shift();
      end?.();
      end?.(); // ending twice frees one slot
      expect(pacer.inFlight).toBeLessThanOrEqual(2);
    }
    await Promise.all(turns);
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('a request held back by a per-resource limit does not hold back requests for other resources', async () => {
    const clock = new FakeClock(0);
    const pacer = createPacer({
      preset: {
        name: 'custom',
        policies: [window(100, '1s')],
        rules: resourceRules([
          { route: 'PATCH /booking/v*/bookings/{id}', limit: 1, periodMs: 60_000 },
        ]),
      },
      clock,
      sleep: movingSleep(clock),
      safetyMarginMs: 0,
    });
    const sent: string[] = [];
    const send = (method: string, path: string) =>
      pacer.acquire({ method, url: `https://api.test${path}` }).then((done) => {
        sent.push(`${clock.now()} ${method} ${path}`);
        done();
      });
    await Promise.all([
      send('PATCH', '/booking/v1/bookings/B1'),
      send('PATCH', '/booking/v2/bookings/B1'),
      send('GET', '/booking/v1/reservations'),
      send('PATCH', '/booking/v1/bookings/B2'),
    ]);
    expect(sent).toEqual([
      '0 PATCH /booking/v1/bookings/B1',
      '0 GET /booking/v1/reservations',
      '0 PATCH /booking/v1/bookings/B2',
      '60000 PATCH /booking/v2/bookings/B1',
    ]);
  });

  it('a request held back for a minute by a per-resource limit does not make the pacer oversleep a request due sooner', async () => {
    const timers = new FakeTimers(new FakeClock(0));
    const pacer = createPacer({
      preset: {
        name: 'custom',
        policies: [window(5, '1s')],
        rules: resourceRules([
          { route: 'PATCH /booking/v*/bookings/{id}', limit: 1, periodMs: 60_000 },
        ]),
      },
      clock: timers.clock,
      sleep: timers.sleep,
      safetyMarginMs: 0,
    });
    const sent: string[] = [];
    const send = async (at: number, method: string, path: string) => {
      await timers.at(at);
      const done = await pacer.acquire({ method, url: `https://api.test${path}` });
      sent.push(`${timers.clock.now()} ${method} ${path}`);
      done();
    };
    await timers.run(
      Promise.all([
        send(0, 'PATCH', '/booking/v1/bookings/B1'),
        send(0, 'PATCH', '/booking/v1/bookings/B1'),
        ...[1, 2, 3, 4, 5].map((i) => send(10, 'GET', `/booking/v1/reservations/R${i}`)),
      ]),
    );
    expect(sent).toEqual([
      '0 PATCH /booking/v1/bookings/B1',
      '10 GET /booking/v1/reservations/R1',
      '10 GET /booking/v1/reservations/R2',
      '10 GET /booking/v1/reservations/R3',
      '10 GET /booking/v1/reservations/R4',
      // The window of 5 per second, counting the patch at 0, frees a place at 1 s: not at the
      // minute the second patch waits for.
      '1000 GET /booking/v1/reservations/R5',
      '60000 PATCH /booking/v1/bookings/B1',
    ]);
  });

  it('a clock stepped back does not let a send through before the limits allow it', async () => {
    const timers = new FakeTimers(new FakeClock(10_000));
    const pacer = createPacer({
      preset: presetOf([window(5, '1s')]),
      clock: timers.clock,
      sleep: timers.sleep,
      safetyMarginMs: 0,
    });
    for (let i = 0; i < 5; i++) (await pacer.acquire(target))();
    timers.clock.set(9_500);
    const done = await timers.run(pacer.acquire(target));
    done();
    // The five sends at 10 s fill the window until 11 s, whatever the clock said in between.
    expect(timers.clock.now()).toBe(11_000);
  });

  it('gives up a wait when its signal aborts, and the queue goes on without it', async () => {
    const clock = new FakeClock(0);
    let wake: () => void = () => undefined;
    const pacer = createPacer({
      preset: presetOf([window(1, '1s')]),
      clock,
      safetyMarginMs: 0,
      sleep: () =>
        new Promise<void>((resolve) => {
          wake = () => {
            clock.advance(1000);
            resolve();
          };
        }),
    });
    (await pacer.acquire(target))();
    const controller = new AbortController();
    const abandoned = pacer.acquire(target, controller.signal);
    const next = pacer.acquire(target);
    expect(pacer.waiting).toBe(2);
    controller.abort(new Error('not needed'));
    await expect(abandoned).rejects.toThrow('not needed');
    expect(pacer.waiting).toBe(1);
    wake();
    (await next)();
    await expect(pacer.acquire(target, AbortSignal.abort('gone'))).rejects.toBe('gone');
  });

  it('stretches windows and shrinks bursts by the safety margin', async () => {
    const clock = new FakeClock(0);
    const pacer = createPacer({
      preset: presets.live,
      clock,
      sleep: movingSleep(clock),
      safetyMarginMs: 100,
    });
    let sentAtZero = 0;
    const turns = Array.from({ length: 250 }, () =>
      pacer.acquire(target).then((done) => {
        if (clock.now() === 0) sentAtZero++;
        done();
      }),
    );
    await Promise.all(turns);
    // Burst 200 of the average-rate policy, less 100 per s x 100 ms.
    expect(sentAtZero).toBe(190);
  });

  it('paces a request whose URL cannot be parsed by the global limits, as the root path', async () => {
    const clock = new FakeClock(0);
    const pacer = createPacer({
      preset: {
        name: 'custom',
        policies: [window(2, '1s')],
        rules: resourceRules([{ route: 'GET /', limit: 1, periodMs: 60_000 }]),
      },
      clock,
      sleep: movingSleep(clock),
      safetyMarginMs: 0,
    });
    const sent: string[] = [];
    const send = (url: string) =>
      pacer.acquire({ method: 'GET', url }).then((done) => {
        sent.push(`${clock.now()} ${url}`);
        done();
      });
    await Promise.all([send('not a url'), send('https://api.test/'), send('http://[::1')]);
    expect(sent).toEqual(['0 not a url', '60000 https://api.test/', '120000 http://[::1']);
  });

  it('paces a path from the root under its resource limits, as the absolute URL', async () => {
    const sendTimes = async (url: string) => {
      const clock = new FakeClock(0);
      const pacer = createPacer({
        preset: presets.development,
        clock,
        sleep: movingSleep(clock),
        safetyMarginMs: 0,
      });
      const times: number[] = [];
      for (let i = 0; i < 6; i++) {
        (await pacer.acquire({ method: 'PATCH', url }))();
        times.push(clock.now());
      }
      return times;
    };
    const absolute = await sendTimes('https://api.test/booking/v1/bookings/B1');
    expect(await sendTimes('/booking/v1/bookings/B1')).toEqual(absolute);
    expect(absolute.at(-1)).toBeGreaterThanOrEqual(60_000);
  });

  it('refuses only the request the limiter cannot read, with its typed error, and serves the rest', async () => {
    const clock = new FakeClock(0);
    const pacer = createPacer({ preset: presets.live, clock, sleep: movingSleep(clock) });
    const refused = await pacer.acquire({ method: '', url: target.url }).catch((e: unknown) => e);
    expect(isInvalidRequestError(refused)).toBe(true);
    expect(pacer.waiting).toBe(0);
    const done = await pacer.acquire(target);
    expect(pacer.inFlight).toBe(1);
    done();
    expect(pacer.inFlight).toBe(0);
  });

  it('fails the waiters with a typed error when the clock returns no time, and never leaks a slot', async () => {
    let now = 0;
    let broken = false;
    const clock = { now: () => (broken ? Number.NaN : now) };
    const pacer = createPacer({
      preset: presetOf([window(1, '1s')]),
      clock,
      safetyMarginMs: 0,
      sleep: () =>
        new Promise<void>((resolve) =>
          setImmediate(() => {
            now += 1000;
            broken = true;
            resolve();
          }),
        ),
    });
    (await pacer.acquire(target))();
    const held = await pacer.acquire(target).catch((e: unknown) => e);
    expect(isConfigurationError(held)).toBe(true);
    const next = await pacer.acquire(target).catch((e: unknown) => e);
    expect(isConfigurationError(next)).toBe(true);
    expect(pacer.waiting).toBe(0);
    broken = false;
    (await pacer.acquire(target))();
    expect(pacer.inFlight).toBe(0);
  });

  it('wakes the queue when the injected sleep returns no promise', async () => {
    const clock = new FakeClock(0);
    const pacer = createPacer({
      preset: presetOf([window(1, '1s')]),
      clock,
      safetyMarginMs: 0,
      sleep: ((ms: number) => void clock.advance(ms)) as unknown as Sleep,
    });
    (await pacer.acquire(target))();
    (await pacer.acquire(target))();
    expect(clock.now()).toBe(1000);
    expect(pacer.waiting).toBe(0);
  });

  it('throws a ConfigurationError for a preset without time limits or a bad margin', () => {
    const cases = [
      { preset: presetOf([concurrency(3)]) },
      { preset: undefined as never },
      { preset: livePreset(), safetyMarginMs: -1 },
      { preset: developmentPreset(), safetyMarginMs: 0.5 },
    ];
    for (const options of cases) {
      expect(isConfigurationError(thrown(() => createPacer(options)))).toBe(true);
    }
    expect(thrown(() => createPacer({ preset: presetOf([concurrency(3)]) }))).toMatchObject({
      code: 'invalid_option',
      message:
        'createPacer preset must be a preset with a window or rate policy to pace by, got an object.',
    });
  });

  it('throws a ConfigurationError, not a TypeError, for options that are not an object or a sleep that is not a function', () => {
    for (const options of [null, undefined, 'live', [livePreset()]]) {
      const error = thrown(() => createPacer(options as never));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toContain(
        'createPacer options must be an object such as { preset: presets.live }, got ',
      );
    }
    const error = thrown(() => createPacer({ preset: livePreset(), sleep: 10 as never }));
    expect(isConfigurationError(error) && (error as Error).message).toContain(
      'sleep must be a function that waits (ms, signal), got 10.',
    );
  });
});

/** Calls sent through a paced retrying fetch on fake timers: when each was sent, by its index. */
async function pacedCalls(options: {
  preset: LimitPreset;
  arrivals: readonly number[];
  marginMs?: number;
  latencyMs?: (call: number) => number;
  answer?: (call: number, attempt: number) => Response;
}) {
  const timers = new FakeTimers(new FakeClock(0));
  const { clock, sleep } = timers;
  const sends: number[][] = options.arrivals.map(() => []);
  const fetch = createRetryingFetch({
    clock,
    sleep,
    pace: createPacer({
      preset: options.preset,
      clock,
      sleep,
      ...(options.marginMs === undefined ? {} : { safetyMarginMs: options.marginMs }),
    }),
    fetch: async (input) => {
      const call = Number(new URL(String(input)).searchParams.get('call'));
      const attempts = sends[call] as number[];
      attempts.push(clock.now());
      await sleep(options.latencyMs?.(call) ?? 0);
      return options.answer?.(call, attempts.length) ?? new Response('ok');
    },
  });
  const statuses = await timers.run(
    Promise.all(
      options.arrivals.map(async (arrival, call) => {
        await timers.at(arrival);
        const response = await fetch(`https://api.test/booking/v1/reservations?call=${call}`);
        return response.status;
      }),
    ),
  );
  return { sends, statuses };
}

const arrivalsOf = (gaps: readonly number[]) => {
  let t = 0;
  return gaps.map((gap) => (t += gap));
};

/** Arrival patterns of up to `max` calls: arbitrary gaps, or bursts separated by pauses. */
const arrivalPatterns = (max: number) =>
  fc
    .oneof(
      arbitraryGaps(max),
      burstyGaps().map((gaps) => gaps.slice(0, max)),
    )
    .filter((gaps) => gaps.length > 0)
    .map(arrivalsOf);

/** Every call of `times` through the library's own limiter on `preset`: how many it refuses. */
function refusedByLimiter(preset: LimitPreset, times: readonly number[]): number {
  const clock = new FakeClock(0);
  const limiter = createLimiter({ preset, clock });
  let refused = 0;
  for (const t of [...times].sort((a, b) => a - b)) {
    clock.set(t);
    const decision = limiter.check({
      clientId: 'client',
      accountCode: 'account',
      method: 'GET',
      path: '/booking/v1/reservations',
    });
    // The server's throttle counts requests in flight, which a list of instants does not give.
    if (decision.allowed) decision.release();
    else refused++;
  }
  return refused;
}

describe('createPacer paces at the rate of its preset (oracle: the specification’s limits)', () => {
  it('sends 12 parallel calls under Development in 2.1 s: 5 at once, 5 at 1.05 s, 2 at 2.1 s', async () => {
    const twelve = Array.from({ length: 12 }, () => 0);
    const { sends, statuses } = await pacedCalls({ preset: presets.development, arrivals: twelve });
    expect(statuses.every((s) => s === 200)).toBe(true);
    // The earliest schedule with the default margin of 50 ms: each window 1,050 ms.
    expect(sends.flat()).toEqual([0, 0, 0, 0, 0, 1050, 1050, 1050, 1050, 1050, 2100, 2100]);
    expect(sends.flat()).toEqual(earliestSchedule(withMargin(specLimits.development, 50), twelve));
    // Without the margin, exactly the specification's schedule: 5 per second is 2 s.
    const exact = await pacedCalls({ preset: presets.development, arrivals: twelve, marginMs: 0 });
    expect(exact.sends.flat()).toEqual(earliestSchedule(specLimits.development, twelve));
    expect(exact.sends.flat().at(-1)).toBe(2000);
  });

  it('past 200 calls under Development the minute binds: call 201 goes a minute (and the margin) after the first', async () => {
    const many = Array.from({ length: 450 }, () => 0);
    const { sends } = await pacedCalls({ preset: presets.development, arrivals: many });
    const sent = sends.flat();
    expect(sent).toEqual(earliestSchedule(withMargin(specLimits.development, 50), many));
    expect(sent[199]).toBe(39 * 1050);
    expect(sent[200]).toBe(60_050);
    expect(excess(specLimits.development, sent)).toBeUndefined();
  });

  it('past 3,500 calls under Live the minute binds: call 3,501 goes a minute (and the margin) after the first', async () => {
    const many = Array.from({ length: 3_600 }, () => 0);
    const { sends } = await pacedCalls({ preset: presets.live, arrivals: many });
    const sent = sends.flat();
    expect(sent).toEqual(earliestSchedule(withMargin(specLimits.live, 50), many));
    // 195 at once, then 100 per second; the minute then holds the rest.
    expect(sent.filter((t) => t === 0)).toHaveLength(195);
    expect(sent[3_499]).toBe(33_050);
    expect(sent[3_500]).toBe(60_050);
    expect(excess(specLimits.live, sent)).toBeUndefined();
  });

  it('a 429 that comes all the same is retried after its Retry-After, and the retry waits its turn like any call', async () => {
    const six = Array.from({ length: 6 }, () => 0);
    const { sends, statuses } = await pacedCalls({
      preset: presets.development,
      arrivals: six,
      marginMs: 0,
      // Another process of the same account used the server's quota: the first call is refused.
      answer: (call, attempt) =>
        call === 0 && attempt === 1
          ? new Response('Too many requests', { status: 429, headers: { 'retry-after': '2' } })
          : new Response('ok'),
    });
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(sends).toEqual([[0, 2000], [0], [0], [0], [0], [1000]]);
    // The refused attempt is counted too: the client stays on the safe side.
    expect(excess(specLimits.development, sends.flat())).toBeUndefined();
  });

  it('Development, any number of calls (the minute window binding past 200) and any arrivals: never over a limit, none refused with jitter up to the margin, each sent at the earliest instant the limits with the margin allow', async () => {
    await fc.assert(
      fc.asyncProperty(
        arrivalPatterns(450),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 900 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 450, maxLength: 450 }),
        async (arrivals, margin, latency, jitter) => {
          // Responses that take up to 900 ms: the throttle of 5 never holds a call that the
          // 5-per-second window lets go.
          const { sends, statuses } = await pacedCalls({
            preset: presets.development,
            arrivals,
            marginMs: margin,
            latencyMs: () => latency,
          });
          const sent = sends.map((attempts) => attempts[0] as number);
          expect(statuses.every((s) => s === 200)).toBe(true);
          expect(sends.every((attempts) => attempts.length === 1)).toBe(true);
          // (a) Never over a limit, with the margin too.
          expect(excess(specLimits.development, sent)).toBeUndefined();
          expect(excess(withMargin(specLimits.development, margin), sent)).toBeUndefined();
          // A server enforcing the specification, reached with up to `margin` ms of jitter, and
          // the library's own limiter, refuse none.
          // Whole milliseconds: the library's limiter is not exact on fractions of one (float sums).
          const arrived = sent.map(
            (t, i) => t + Math.floor(latency / 3 + margin * (jitter[i] as number)),
          );
          expect(new SpecServer(specLimits.development).receive(arrived)).toBe(0);
          expect(refusedByLimiter(presets.development, arrived)).toBe(0);
          // (b) Each call at the earliest instant the limits with the margin allow, first in,
          // first out; so the last within the exact schedule stretched by (1 s + margin) / 1 s.
          const paced = earliestSchedule(withMargin(specLimits.development, margin), arrivals);
          expect(sent).toEqual(paced);
          const last = earliestSchedule(specLimits.development, arrivals).at(-1) as number;
          expect(sent.at(-1)).toBeLessThanOrEqual((last * (1000 + margin)) / 1000);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('Live, any number of calls and any arrivals: never over a limit, none refused with jitter up to the margin, each sent at the earliest instant the limits with the margin allow', async () => {
    await fc.assert(
      fc.asyncProperty(
        arrivalPatterns(700),
        fc.integer({ min: 0, max: 100 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 700, maxLength: 700 }),
        async (arrivals, margin, jitter) => {
          // Answers at once: the throttle (20 in flight) never holds a call back.
          const { sends, statuses } = await pacedCalls({
            preset: presets.live,
            arrivals,
            marginMs: margin,
          });
          const sent = sends.map((attempts) => attempts[0] as number);
          expect(statuses.every((s) => s === 200)).toBe(true);
          expect(excess(specLimits.live, sent)).toBeUndefined();
          expect(excess(withMargin(specLimits.live, margin), sent)).toBeUndefined();
          const arrived = sent.map((t, i) => t + Math.floor(margin * (jitter[i] as number)));
          expect(new SpecServer(specLimits.live).receive(arrived)).toBe(0);
          expect(refusedByLimiter(presets.live, arrived)).toBe(0);
          expect(sent).toEqual(earliestSchedule(withMargin(specLimits.live, margin), arrivals));
        },
      ),
      { numRuns: 30 },
    );
  });

  it('a rate whose burst is no more than the margin sends: still none refused with jitter up to the margin (a burst of 1 used to keep no margin)', async () => {
    const cases: [Policy[], SpecLimit[]][] = [
      [[rate(100, 3)], [{ kind: 'average', perSecond: 100, burst: 3 }]],
      [
        [rate(2, 1), window(3, '2s')],
        [
          { kind: 'average', perSecond: 2, burst: 1 },
          { kind: 'window', limit: 3, windowMs: 2000 },
        ],
      ],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...cases),
        arrivalPatterns(60),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 60, maxLength: 60 }),
        async ([policies, limits], arrivals, margin, jitter) => {
          const preset = presetOf(policies);
          const { sends } = await pacedCalls({ preset, arrivals, marginMs: margin });
          const sent = sends.map((attempts) => attempts[0] as number);
          expect(sent).toEqual(earliestSchedule(withMargin(limits, margin), arrivals));
          const arrived = sent.map((t, i) => t + Math.floor(margin * (jitter[i] as number)));
          expect(new SpecServer(limits).receive(arrived)).toBe(0);
          expect(refusedByLimiter(preset, arrived)).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  });
});
