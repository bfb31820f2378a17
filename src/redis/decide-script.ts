/**
 * The decision script, written per plan shape as straight-line Lua over locals with the policies'
 * numbers as constants: inside Redis that is what a decision costs. See docs/redis-store.md.
 * @module
 */

import type { ConcurrencyPolicy, Policy, RatePolicy, WindowPolicy } from '../limits/policy.js';
import { emissionInterval } from '../limits/quota.js';
import { STEPS_PER_MS } from '../limits/store.js';
import { releaseArgs, releaseLoop } from './release-script.js';
import {
  ENTRY_SIZE,
  fixedFormat,
  fixedSize,
  LEASE_ENTRY,
  RELEASE_RECORD,
  RELEASE_RECORD_SIZE,
  SECTION_FIELDS,
  signature,
} from './state-codec.js';

/** Bytes of one lease of a throttle. */
const LEASE_SIZE = ENTRY_SIZE.concurrency;

/** What a decision script is written for. */
export interface DecideShape {
  /** The policy list of each distinct scope, in the order of the script's KEYS. */
  readonly scopes: readonly (readonly Policy[])[];
  /** The active policies in plan order, each as its scope's index and its position there. */
  readonly work: readonly (readonly [scope: number, position: number])[];
  /** How long a key outlives the instant its state is fresh again, in ms. */
  readonly marginMs: number;
  /** Reply in bytes (the client reads bulk strings as bytes) rather than in text. */
  readonly binary?: boolean;
  /** The lease id and the given-back leases come packed, as bytes, rather than as text. */
  readonly binaryArguments?: boolean;
  /** The time comes from the caller, as `ARGV[1]`, rather than from the server's `TIME`. */
  readonly clock?: boolean;
  /** `false`: an admission replies its first two numbers only. @defaultValue true */
  readonly statuses?: boolean;
  /** Decide several requests of this shape in one call, in order (see docs/redis-store.md). */
  readonly batched?: boolean;
  /**
   * The request's cost comes as an argument (after the time): each window and rate policy counts
   * that many admissions. Absent, a cost of 1, with no argument.
   */
  readonly costed?: boolean;
  /**
   * Decide and reply the statuses as they are, writing nothing back: no admission, no block, no
   * lease. The reply is a refusal's layout, its first number 1 when the request would be admitted.
   */
  readonly peek?: boolean;
  /**
   * Of each active policy in plan order (as `work`), whether it is in shadow mode: only the
   * others refuse, and an admission that a shadow one would have refused replies that refusal
   * (docs/redis-store.md). Absent: every policy enforces.
   */
  readonly shadow?: readonly boolean[];
}

/** One policy position of one scope, as the generated Lua sees it. */
interface Section {
  readonly policy: Policy;
  readonly scope: number;
  /** How many times the plan's active policies name it (usually 0 or 1). */
  uses: number;
}

// Per-section variables: blocked until, the rate's theoretical arrival time, the stored entry
// count, where the entries start, the first entry still counted (a window's oldest admission still
// inside, a throttle's earliest lease not expired), the policy's own earliest admission time, the
// rate's stored emission interval. Per scope: its stored value, whether it changed, and the bytes
// of release records that trail it.
type SectionVariable = 'B' | 'A' | 'N' | 'O' | 'H' | 'W' | 'I';
type ScopeVariable = 'X' | 'D' | 'T';

/** Lua's limit is 200 locals per function; past this many the variables live in one table. */
const MAX_LOCALS = 160;

/** The throttles of a shape that take leases, in scope and position order. */
export function leaseSlots(shape: DecideShape): readonly (readonly [number, number, number])[] {
  const uses = new Map<string, number>();
  for (const [s, position] of shape.work) {
    if (shape.scopes[s]?.[position]?.kind !== 'concurrency') continue;
    uses.set(`${s}:${position}`, (uses.get(`${s}:${position}`) ?? 0) + 1);
  }
  const slots: [number, number, number][] = [];
  for (const [s, policies] of shape.scopes.entries()) {
    for (const position of policies.keys()) {
      const n = uses.get(`${s}:${position}`);
      if (n !== undefined) slots.push([s, position, n]);
    }
  }
  return slots;
}

/** What the steps of {@link decideScript} share: the shape, its sections, the Lua being written. */
interface Writer {
  readonly shape: DecideShape;
  readonly sections: readonly Section[];
  /** Each scope's first section. */
  readonly first: readonly number[];
  /** The active policies in plan order, as section indices. */
  readonly work: readonly number[];
  /** Whether the variables live in one table (a plan too large for Lua's locals). */
  readonly inTable: boolean;
  /** The Lua expression of scope `s`'s key (from 0). */
  key(s: number): string;
  /** The Lua expression of the request's `i`th argument (from 1). */
  arg(i: number): string;
  /** The reply's `i`th number (from 1): a local, or a slot of the table `reply`. */
  r(i: number): string;
  /** Whether the reply's numbers live in the table `reply` (text replies and large plans). */
  readonly replyTable: boolean;
  /** A section's variable. */
  v(name: SectionVariable, j: number): string;
  /** A scope's variable. */
  sv(name: ScopeVariable, s: number): string;
  /** Append Lua lines. */
  emit(...lines: string[]): void;
  /** The lines of the steps. */
  readonly body: string[];
  /** The locals the steps use, declared before them. */
  readonly declared: string[];
  /** How many throttles take leases. */
  readonly throttles: number;
  /** Where the cost is among the request's arguments (0 without one). */
  readonly costArg: number;
  /** Where the lease id is among the request's arguments. */
  readonly idArg: number;
  /** Where the first given-back lease's arguments are among the request's arguments. */
  readonly firstRelease: number;
  /** Whether the reply ends with the leases the decision dropped expired (see droppedLeases). */
  readonly expiring: boolean;
}

/** Write the decision script for one shape of plan. */
export function decideScript(shape: DecideShape): string {
  const w = newWriter(shape);
  readScopes(w);
  carryRates(w);
  settleEntries(w);
  ownTimes(w);
  refuse(w);
  admit(w);
  statuses(w);
  if (shape.peek !== true) {
    blocks(w);
    writeBack(w);
    droppedLeases(w);
  }
  reply(w);
  const lines = shape.batched === true ? batchedScript(w) : loneScript(w);
  return lines.filter((line) => line !== '').join('\n');
}

/** The writer of a shape: its sections, where its arguments are, and where its variables live. */
function newWriter(shape: DecideShape): Writer {
  const sections: Section[] = [];
  const first: number[] = [];
  for (const [s, policies] of shape.scopes.entries()) {
    first.push(sections.length);
    for (const policy of policies) sections.push({ policy, scope: s, uses: 0 });
  }
  const work = shape.work.map(([s, position]) => {
    const index = first[s]! + position;
    sections[index]!.uses++;
    return index;
  });
  // A peek takes no lease.
  const throttles = shape.peek === true ? 0 : leaseSlots(shape).length;
  // ARGV: the time (from the caller's clock only), the cost (when costed), the lease id (for a
  // throttle only), then the leases given back.
  const timeArgs = shape.clock === true ? 1 : 0;
  const costArg = shape.costed === true ? timeArgs + 1 : 0;
  const idArg = timeArgs + (shape.costed === true ? 2 : 1);
  const widest = Math.max(0, ...shape.scopes.map((p) => p.length));
  const rates = sections.filter((section) => section.policy.kind === 'rate').length;
  const locals =
    8 * sections.length +
    2 * rates +
    2 * shape.scopes.length +
    4 * widest +
    28 +
    (shape.shadow ? 8 : 0);
  const inTable = locals > MAX_LOCALS;
  // A binary reply's numbers are locals, packed straight from them, when there is room for them
  // (each is a local and a register of the packing call); else they fill a table.
  const replyLocals = 2 * (5 + 2 * work.length);
  const replyTable = shape.binary !== true || locals + replyLocals > MAX_LOCALS;
  const declared: string[] = [];
  const variable = variables(inTable, declared);
  // A batch's requests find their keys and arguments past those of the requests before them.
  const batched = shape.batched === true;
  const body: string[] = [];
  return {
    shape,
    sections,
    first,
    work,
    inTable,
    key: (s) => (batched ? `keys[kb + ${s + 1}]` : `keys[${s + 1}]`),
    arg: (i) => (batched ? `argv[ab + ${i}]` : `argv[${i}]`),
    r: (i) => (replyTable ? `reply[${i}]` : variable('R', i)),
    replyTable,
    v: variable,
    sv: variable,
    emit: (...lines) => body.push(...lines),
    body,
    declared,
    throttles,
    costArg,
    idArg,
    firstRelease: idArg + (throttles > 0 ? 1 : 0),
    // A peek writes nothing, so it drops no lease.
    expiring:
      shape.peek !== true && sections.some((section) => section.policy.kind === 'concurrency'),
  };
}

/**
 * The Lua expression of a variable: a local, declared in `declared` on its first use, or for a
 * plan too large for Lua's locals, a slot of the table `V`.
 */
function variables(inTable: boolean, declared: string[]): (name: string, index: number) => string {
  const slots = new Map<string, number>();
  return (name, index) => {
    const local = `${name}${index}`;
    if (!inTable) {
      if (!slots.has(local)) {
        slots.set(local, slots.size);
        declared.push(local);
      }
      return local;
    }
    let slot = slots.get(local);
    if (slot === undefined) {
      slot = slots.size + 1;
      slots.set(local, slot);
    }
    return `V[${slot}]`;
  };
}

/** Globals read once: each global lookup costs in the script's protected environment. */
function preamble(w: Writer): string[] {
  const { shape, sections, work } = w;
  const batched = shape.batched === true;
  return [
    `-- Decision script for ${shape.scopes.length} scope(s), ${sections.length} policies, ${work.length} active${batched ? ', several requests per call' : ''} (see decide-script.ts).`,
    '-- Globals read once: each global lookup costs in the script protected environment.',
    'local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min',
    'local unpack_struct, pack_struct, sub, rep = struct.unpack, struct.pack, string.sub, string.rep',
    'local call, argv, keys, format, concat, unpack = redis.call, ARGV, KEYS, string.format, table.concat, unpack',
    'local find = string.find',
  ];
}

/** Step 1 on the server's own clock: one timeline for every app server. */
const SERVER_TIME = [
  "local clock = call('TIME')",
  'local us = clock[2] + 0',
  'local t = clock[1] * 1000 + (us - us % 1000) / 1000',
];

/** The request's lease id and the steps' variables. */
function requestLocals(w: Writer): string[] {
  const { throttles, inTable, declared } = w;
  return [
    w.costArg > 0 ? `local cost = ${w.arg(w.costArg)} + 0` : '',
    throttles > 0 ? '-- The lease id, unique to the request among the leases of its expiry.' : '',
    throttles > 0
      ? `local id = ${w.arg(w.idArg)}${w.shape.binaryArguments === true ? '' : ' + 0'}`
      : '',
    inTable ? 'local V = {}' : declared.length > 0 ? `local ${declared.join(', ')}` : '',
  ];
}

/** The script of one request: the leases that ride on it, then the decision. */
function loneScript(w: Writer): string[] {
  const { shape } = w;
  return [
    ...preamble(w),
    '-- Leases given back since the last command travel here, before the decision.',
    `if #keys > ${shape.scopes.length} then`,
    releaseLoop(`${shape.scopes.length + 1}`, `${w.firstRelease}`, shape.binaryArguments === true),
    'end',
    "-- Step 1. The time: the caller's, or the server's own clock.",
    ...(shape.clock === true ? [`local t = ${w.arg(1)} + 0`] : SERVER_TIME),
    ...requestLocals(w),
    ...w.body,
  ];
}

/**
 * The script of several requests: the decision is a function of where a request's keys and
 * arguments start (`kb` and `ab`), called for each in turn after the leases given back before it.
 * The server's time is read once for all of them.
 */
function batchedScript(w: Writer): string[] {
  const { shape } = w;
  const clock = shape.clock === true;
  const binaryArguments = shape.binaryArguments === true;
  const perRequest = w.firstRelease - 1;
  return [
    ...preamble(w),
    '-- The expiries of the call, as text (see step 6).',
    'local expiries = {}',
    "-- Step 1. The time: the caller's (each request's own), or the server's own clock.",
    ...(clock ? [] : SERVER_TIME),
    `local function decide(kb, ab${clock ? '' : ', t'})`,
    ...(clock ? [`local t = ${w.arg(1)} + 0`] : []),
    ...requestLocals(w),
    ...w.body,
    'end',
    'local replies = {}',
    'local k, a = 1, 2',
    'for d = 1, argv[1] + 0 do',
    '  local kb, ab = k - 1, a - 1',
    `  local riders = argv[a + ${perRequest}] + 0`,
    `  k, a = k + ${shape.scopes.length}, a + ${perRequest + 1}`,
    '  -- Leases given back before this request was asked for.',
    '  if riders > 0 then',
    releaseLoop('k', 'a', binaryArguments, 'riders'),
    `    k, a = k + riders, a + riders * ${releaseArgs(binaryArguments)}`,
    '  end',
    `  replies[d] = decide(kb, ab${clock ? '' : ', t'})`,
    'end',
    'return replies',
  ];
}

/** Step 2: read each scope. */
function readScopes(w: Writer): void {
  // A value not in the layout is a fresh state; a clock behind a scope's latest decision stands still.
  for (const [s, policies] of w.shape.scopes.entries()) {
    const { v, sv, emit } = w;
    const x = sv('X', s);
    const ids = policies.map((_, i) => w.first[s]! + i);
    const throttled = policies.some((p) => p.kind === 'concurrency');
    emit(`${x} = call('GET', ${w.key(s)})`, `${sv('D', s)} = false`);
    if (throttled) emit(`${sv('T', s)} = 0`);
    emit('do', '  local ok = false');
    if (policies.length === 0) readEmpty(w, s, policies);
    else readFixedFields(w, s, policies, ids, throttled);
    emit('  if not ok then', `    ${x} = ''`);
    for (const j of ids) {
      const p = w.sections[j]!.policy;
      emit(`    ${v('B', j)}, ${v('A', j)}, ${v('N', j)} = 0, 0, 0`);
      // Fresh: nothing to carry over.
      if (p.kind === 'rate') emit(`    ${v('I', j)} = ${lua(emissionInterval(p))}`);
    }
    emit('  end', 'end');
    // Where each section's entries start.
    let offset = String(fixedSize(policies) + 1);
    for (const j of ids) {
      const kind = w.sections[j]!.policy.kind;
      if (ENTRY_SIZE[kind] === 0) continue;
      emit(`${v('O', j)} = ${offset}`);
      offset = `${v('O', j)} + ${v('N', j)} * ${ENTRY_SIZE[kind]}`;
    }
    if (throttled) giveBack(w, s, ids);
  }
}

/** The value starts with its list's signature: one comparison checks every kind. */
function signed(
  w: Writer,
  s: number,
  policies: readonly Policy[],
): [check: string, format: string] {
  const x = w.sv('X', s);
  const sig = signature(policies);
  return [
    `sub(${x}, 1, ${sig.length}) == ${luaBytes(sig)}`,
    `'${fixedFormat(policies)}', ${x}, ${sig.length + 1}`,
  ];
}

/** A scope without policies: its latest decision time alone. */
function readEmpty(w: Writer, s: number, policies: readonly Policy[]): void {
  const x = w.sv('X', s);
  const [check, format] = signed(w, s, policies);
  w.emit(`  if ${x} and #${x} == ${fixedSize(policies)} and ${check} then`);
  w.emit(`    local latest = unpack_struct(${format})`);
  w.emit('    ok = true', '    if latest > t then t = latest end', '  end');
}

/** Each section's two fields, when the value's length adds up. */
function readFixedFields(
  w: Writer,
  s: number,
  policies: readonly Policy[],
  ids: readonly number[],
  throttled: boolean,
): void {
  const { inTable, v, sv, emit } = w;
  const x = sv('X', s);
  const size = fixedSize(policies);
  const [check, format] = signed(w, s, policies);
  emit(`  if ${x} and #${x} >= ${size} and ${check} then`);
  // Blocked until; then the entry count, or the rate's arrival time and emission interval: locals,
  // or for a plan too large for locals, a table's entries.
  const starts: number[] = [];
  let next = 2;
  for (const p of policies) {
    starts.push(next);
    next += SECTION_FIELDS[p.kind];
  }
  const field = (i: number, f: 0 | 1 | 2) =>
    inTable ? `h[${starts[i]! + f}]` : `${'bce'[f]}${ids[i]}`;
  if (inTable) {
    emit(`    local h = { unpack_struct(${format}) }`, '    local latest = h[1]');
  } else {
    const names = ids.flatMap((_, i) =>
      policies[i]!.kind === 'rate'
        ? [field(i, 0), field(i, 1), field(i, 2)]
        : [field(i, 0), field(i, 1)],
    );
    emit(`    local latest, ${names.join(', ')} = unpack_struct(${format})`);
  }
  const length = policies.flatMap((p, i) =>
    ENTRY_SIZE[p.kind] === 0 ? [] : [`${field(i, 1)} * ${ENTRY_SIZE[p.kind]}`],
  );
  const entriesEnd = [String(size), ...length].join(' + ');
  const checks: string[] = [];
  if (throttled) {
    // The records of leases given back since the value was written follow its entries.
    emit(`    local tail = #${x} - (${entriesEnd})`);
    checks.push('tail >= 0', `tail % ${RELEASE_RECORD_SIZE} == 0`);
  } else {
    checks.push(`${entriesEnd} == #${x}`);
  }
  emit(`    if ${checks.join(' and ')} then`, '      ok = true');
  emit('      if latest > t then t = latest end');
  for (const [i, j] of ids.entries()) {
    const rate = policies[i]!.kind === 'rate';
    const [a, n] = rate ? [field(i, 1), '0'] : ['0', field(i, 1)];
    emit(`      ${v('B', j)}, ${v('A', j)}, ${v('N', j)} = ${field(i, 0)}, ${a}, ${n}`);
    if (rate) emit(`      ${v('I', j)} = ${field(i, 2)}`);
  }
  if (throttled) emit(`      ${sv('T', s)} = tail`);
  emit('    end', '  end');
}

/**
 * Apply the release records that trail scope `s`'s value: each takes its lease out of its
 * throttle's entries, and the value is written back without them. A lease given back first in,
 * first out is the throttle's first entry: the entries then start 16 bytes later, and nothing is
 * copied. One from the middle is cut out of the value, and the entries after it move up.
 */
function giveBack(w: Writer, s: number, ids: readonly number[]): void {
  const { sections, v, sv, emit } = w;
  const [x, tail] = [sv('X', s), sv('T', s)];
  emit(
    `if ${tail} > 0 then`,
    `  ${sv('D', s)} = true`,
    `  local stored = ${x}`,
    `  for r = #stored - ${tail} + 1, #stored, ${RELEASE_RECORD_SIZE} do`,
    `    local position, expiry, lease = unpack_struct('${RELEASE_RECORD}', stored, r)`,
  );
  let branch = 'if';
  for (const [i, j] of ids.entries()) {
    if (sections[j]!.policy.kind !== 'concurrency') continue;
    const [n, o] = [v('N', j), v('O', j)];
    const later = ids.slice(i + 1).filter((k) => ENTRY_SIZE[sections[k]!.policy.kind] > 0);
    emit(
      `    ${branch} position == ${i + 1} and ${n} > 0 then`,
      `      local first_expiry, first_id = unpack_struct('${LEASE_ENTRY}', ${x}, ${o})`,
      '      if first_expiry == expiry and first_id == lease then',
      `        ${o}, ${n} = ${o} + ${LEASE_SIZE}, ${n} - 1`,
      '      else',
      // Rare (a lease given back out of order): the function is made only here.
      ...FIND_LEASE.map((line) => `        ${line}`),
      ...(later.length > 0 ? [`        local before = ${n}`] : []),
      `        ${x}, ${n} = give_back(${x}, ${o}, ${n}, expiry, lease)`,
      ...(later.length > 0
        ? [
            `        if ${n} < before then`,
            ...later.map((k) => `          ${v('O', k)} = ${v('O', k)} - ${LEASE_SIZE}`),
            '        end',
          ]
        : []),
      '      end',
    );
    branch = 'elseif';
  }
  emit('    end', '  end', 'end');
}

/**
 * Step 2, last: once every scope is read and `t` settled, each rate state last decided under
 * another emission interval (the scope's limits overridden, or back) has its backlog carried over,
 * as store quota.ts carriedArrival computes it, in the same operations; a decision that records
 * writes the scope back with the new interval whatever else it records.
 */
function carryRates(w: Writer): void {
  const { sections, v, sv, emit } = w;
  for (const [j, { policy: p, scope }] of sections.entries()) {
    if (p.kind !== 'rate') continue;
    const [a, i, next] = [v('A', j), v('I', j), lua(emissionInterval(p))];
    emit(
      `if ${i} ~= ${next} then`,
      `  if ${a} > t then ${a} = t + ceil((${a} - t) / ${i} * ${next} * ${STEPS_PER_MS}) / ${STEPS_PER_MS} end`,
      w.shape.peek === true ? '' : `  ${sv('D', scope)} = true`,
      'end',
    );
  }
}

/** Step 3, first: each window's and throttle's first entry still counted, by a binary search. */
function settleEntries(w: Writer): void {
  const { sections, v, sv, emit } = w;
  // A window's admission at `a` counts until `a + windowMs` (the same double step 3 announces), a
  // throttle's lease until it expires. The first two reads settle the usual cases.
  for (const [j, section] of sections.entries()) {
    const p = section.policy;
    if (p.kind === 'rate') continue;
    const x = sv('X', section.scope);
    const [n, o, h] = [v('N', j), v('O', j), v('H', j)];
    const stride = ENTRY_SIZE[p.kind];
    const leaves = (entry: string) => (p.kind === 'window' ? `${entry} + ${p.windowMs}` : entry);
    emit(
      'do',
      `  if ${n} == 0 or ${leaves(`unpack_struct('<d', ${x}, ${o})`)} > t then`,
      `    ${h} = 1`,
      `  elseif ${n} == 1 or ${leaves(`unpack_struct('<d', ${x}, ${o} + ${stride})`)} > t then`,
      `    ${h} = 2`,
      '  else',
      `    local lo, hi = 3, ${n} + 1`,
      '    while lo < hi do',
      '      local mid = floor((lo + hi) / 2)',
      `      if ${leaves(`unpack_struct('<d', ${x}, ${o} + (mid - 1) * ${stride})`)} <= t then lo = mid + 1 else hi = mid end`,
      '    end',
      `    ${h} = lo`,
      '  end',
      'end',
    );
    // An active throttle's expired leases are dropped by this decision, whatever it decides, as
    // the memory store prunes them: the scope is written back without them (and they are
    // reported, see droppedLeases). A peek writes nothing.
    if (p.kind === 'concurrency' && section.uses > 0 && w.shape.peek !== true) {
      emit(`if ${h} > 1 then ${sv('D', section.scope)} = true end`);
    }
  }
}

/** Step 3: each active policy's own earliest admission time (for the cost, when costed). */
function ownTimes(w: Writer): void {
  const { sections, v, sv, emit } = w;
  const costed = w.costArg > 0;
  // As the memory store computes it, blocks aside.
  for (const [j, section] of sections.entries()) {
    if (section.uses === 0) continue;
    const p = section.policy;
    const x = sv('X', section.scope);
    const w = v('W', j);
    if (p.kind === 'window') {
      emit(
        'do',
        `  local excess = ${v('N', j)} - ${v('H', j)} + 1 - ${p.limit}${costed ? ' + cost - 1' : ''}`,
        `  if excess < 0 then ${w} = t else ${w} = unpack_struct('<d', ${x}, ${v('O', j)} + (${v('H', j)} + excess - 1) * 8) + ${p.windowMs} end`,
        'end',
      );
    } else if (p.kind === 'rate') {
      emit(
        'do',
        `  local allow_at = ${v('A', j)} - (${p.burst} - ${costed ? 'cost' : '1'}) * ${lua(emissionInterval(p))}`,
        `  if allow_at <= t then ${w} = t else ${w} = allow_at end`,
        'end',
      );
    } else {
      emit(
        `if ${v('N', j)} - ${v('H', j)} + 1 < ${p.max} then ${w} = t else ${w} = t + ${p.retryAfterMs} end`,
      );
    }
  }
}

/** Step 4: whether to refuse, the policy that names the refusal, and Retry-After. */
function refuse(w: Writer): void {
  const { work, sections, v, emit } = w;
  // On a tie the policy whose own limit frees up last names the refusal, then the later one in
  // plan order (the more specific limit); Retry-After as store.ts announcedSeconds counts it.
  const costed = w.costArg > 0;
  const shadow = w.shape.shadow;
  // With shadow policies, the refusal every active policy enforcing would make is chosen too
  // (prefixed `s_`), to reply when only shadow policies would refuse.
  const choices = shadow === undefined ? [''] : ['', 's_'];
  for (const x of choices) {
    emit(`local ${x}earliest, ${x}refusing, ${x}refusing_own, ${x}blocked = t, 0, t, false`);
  }
  for (const [k, j] of work.entries()) {
    const [w, b] = [v('W', j), v('B', j)];
    for (const x of choices) {
      if (x === '' && shadow?.[k] === true) continue;
      // A block frees a policy at its end, or later when its own limit needs more room: a cost
      // above one, or a window or rate an override lowered since the block was announced.
      const throttle = sections[j]!.policy.kind === 'concurrency';
      const blockedAt = !throttle
        ? `  if ${b} > t then ${x}blocked = true; if not (${w} > ${b}) then at = ${b} end end`
        : costed
          ? `  if ${b} > t then ${x}blocked = true; if not (cost > 1 and ${w} > ${b}) then at = ${b} end end`
          : `  if ${b} > t then at, ${x}blocked = ${b}, true end`;
      emit(
        'do',
        `  local at = ${w}`,
        blockedAt,
        `  if at > t and (at > ${x}earliest or (at == ${x}earliest and ${w} >= ${x}refusing_own)) then`,
        `    ${x}earliest, ${x}refusing, ${x}refusing_own = at, ${k + 1}, ${w}`,
        '  end',
        'end',
      );
    }
  }
  emit('local seconds = 0', 'if refusing > 0 then', ...announced('seconds', 'earliest'), 'end');
  if (shadow !== undefined) {
    emit(
      'local s_seconds, shadowed = 0, refusing == 0 and s_refusing > 0',
      'if shadowed then',
      ...announced('s_seconds', 's_earliest'),
      'end',
    );
  }
}

/** Lua: the Retry-After `seconds` of a refusal whose policies free up at `earliest`. */
function announced(seconds: string, earliest: string): string[] {
  return [
    `  ${seconds} = ceil((${earliest} - t) / 1000)`,
    `  if ${seconds} < 1 then ${seconds} = 1 end`,
    `  if t + ${seconds} * 1000 < ${earliest} then`,
    `    ${seconds} = ${seconds} + 1`,
    `  elseif ${seconds} > 1 and t + (${seconds} - 1) * 1000 >= ${earliest} then`,
    `    ${seconds} = ${seconds} - 1`,
    '  end',
  ];
}

/** Step 5: admitted, every active policy records the request; refused, nothing is recorded. */
function admit(w: Writer): void {
  const { sections, work, r, replyTable, v, sv, emit } = w;
  emit('local admitted = refusing == 0', replyTable ? 'local reply' : '');
  if (w.shape.peek === true) {
    peekHead(w);
    return;
  }
  // Step 5a. Admitted: every active policy records the request (a window's admission and a
  // throttle's lease are written in step 6); each scope with an active policy changes.
  emit('if admitted then');
  const times = w.costArg > 0 ? 'cost * ' : '';
  for (const j of work) {
    const p = sections[j]!.policy;
    const a = v('A', j);
    if (p.kind === 'rate') {
      emit(
        `  if ${a} < t then ${a} = t end`,
        `  ${a} = ${a} + ${times}${lua(emissionInterval(p))}`,
      );
    }
  }
  for (const s of new Set(work.map((j) => sections[j]!.scope))) emit(`  ${sv('D', s)} = true`);
  const refused = ['0', 't', 'blocked and 2 or 1', 'seconds', 'refusing'];
  // Step 5b. Refused: record nothing. The statuses are read before the blocks change. (An
  // admission's reply is written in one piece at the end.)
  if (replyTable) {
    // The reply table is made at its full size, with a place for each status: growing it would
    // rehash it.
    const places = ', 0'.repeat(2 * work.length);
    emit('else', `  reply = { ${refused.join(', ')}${places} }`, 'end');
    return;
  }
  // Locals, not a table: a table per decision costs its allocation and its collection.
  const head = [1, 2, 3, 4, 5].map(r).join(', ');
  emit('else', `  ${head} = ${refused.join(', ')}`, 'end');
}

/** A peek's reply head, admitted or not: it records nothing, so nothing changes. */
function peekHead(w: Writer): void {
  const head = ['admitted and 1 or 0', 't', 'blocked and 2 or 1', 'seconds', 'refusing'];
  if (w.shape.shadow !== undefined) {
    // Admitted, but a shadow policy would have refused: 3, and that refusal's numbers.
    w.emit('if shadowed then blocked, seconds, refusing = s_blocked, s_seconds, s_refusing end');
    head[0] = 'shadowed and 3 or (admitted and 1 or 0)';
  }
  if (w.replyTable) {
    w.emit(`reply = { ${head.join(', ')}${', 0'.repeat(2 * w.work.length)} }`);
  } else {
    w.emit(`${[1, 2, 3, 4, 5].map(w.r).join(', ')} = ${head.join(', ')}`);
  }
}

/** The Lua names a status is written with: a section's variables and where the status goes. */
interface StatusNames {
  readonly x: string;
  readonly n: string;
  readonly o: string;
  readonly h: string;
  readonly a: string;
  /** The two reply numbers, as `remaining, reset`. */
  readonly at: string;
}

/** The statuses of the active policies. */
function statuses(w: Writer): void {
  const { sections, work, r, v, sv, emit } = w;
  // Remaining and reset-after (ms) of every active policy, for a refusal (an admission replies
  // with what they are worked out from, see reply()). Comparisons rather than math.max and
  // math.min, whose C calls cost more, with their results: max(0, x) is x only when x > 0 (0 for
  // -0), min(b, x) is x only when x < b. A peek replies them either way.
  const peek = w.shape.peek === true;
  emit(peek ? 'do' : 'if not admitted then');
  for (const [k, j] of work.entries()) {
    const { policy: p, scope } = sections[j]!;
    const x = sv('X', scope);
    const [n, o, h, a] = [v('N', j), v('O', j), v('H', j), v('A', j)];
    const names = { x, n, o, h, a, at: `${r(6 + 2 * k)}, ${r(7 + 2 * k)}` };
    if (p.kind === 'window') emit(...windowStatus(p, names));
    else if (p.kind === 'rate') emit(...rateStatus(p, names));
    else emit(...throttleStatus(p, names));
  }
  emit('end');
}

function windowStatus(p: WindowPolicy, { x, n, o, h, at }: StatusNames): string[] {
  return [
    'do',
    `  local count = ${n} - ${h} + 1`,
    `  local remaining, reset = ${p.limit} - count, 0`,
    '  if remaining < 0 then remaining = 0 end',
    '  if count > 0 then',
    `    local newest = unpack_struct('<d', ${x}, ${o} + (${n} - 1) * 8)`,
    `    reset = newest + ${p.windowMs} - t`,
    '    if reset < 0 then reset = 0 end',
    '  end',
    `  ${at} = remaining, reset`,
    'end',
  ];
}

function rateStatus(p: RatePolicy, { a, at }: StatusNames): string[] {
  return [
    'do',
    `  local interval = ${lua(emissionInterval(p))}`,
    `  local backlog = (t > ${a} and t or ${a}) - t`,
    `  local remaining = ${p.burst} - ceil(backlog / interval)`,
    `  if not (remaining < ${p.burst}) then remaining = ${p.burst} end`,
    '  if not (remaining > 0) then remaining = 0 end',
    `  local reset = ${a} - t`,
    '  if not (reset > 0) then reset = 0 end',
    `  ${at} = remaining, reset`,
    'end',
  ];
}

function throttleStatus(p: ConcurrencyPolicy, { n, h, at }: StatusNames): string[] {
  return [
    'do',
    `  local held = ${n} - ${h} + 1`,
    `  local remaining = ${p.max} - held`,
    '  if not (remaining > 0) then remaining = 0 end',
    `  ${at} = remaining, 0`,
    'end',
  ];
}

/** The blocks of a refusal. */
function blocks(w: Writer): void {
  const { sections, work, v, sv, emit } = w;
  // Refused: a block already announced stays; every policy without room and without a block is
  // blocked until the announced instant.
  const shadow = w.shape.shadow;
  emit('if not admitted then', '  local until_ = t + seconds * 1000');
  for (const [k, j] of work.entries()) {
    // A shadow policy is never blocked.
    if (shadow?.[k] === true) continue;
    const [w, b] = [v('W', j), v('B', j)];
    emit(
      `  if ${w} > t and not (${b} > t) then ${b}, ${sv('D', sections[j]!.scope)} = until_, true end`,
    );
  }
  emit('end');
}

/** Step 6: write back the changed scopes. */
function writeBack(w: Writer): void {
  // Writes come last, so a script that fails before them records nothing.
  w.emit(`local entry = admitted and pack_struct('<d', t)`);
  for (const [s, policies] of w.shape.scopes.entries()) {
    const { v, sv, emit } = w;
    emit(`if ${sv('D', s)} then`, '  local horizon = 0');
    const fixed: string[] = ['t'];
    const parts: string[] = [];
    for (const j of policies.map((_, i) => w.first[s]! + i)) {
      const p = w.sections[j]!.policy;
      const names = { b: v('B', j), a: v('A', j), n: v('N', j), o: v('O', j), h: v('H', j) };
      emit(`  if ${names.b} > horizon then horizon = ${names.b} end`);
      if (p.kind === 'rate') {
        fixed.push(names.b, names.a, lua(emissionInterval(p)));
        emit(`  if ${names.a} > horizon then horizon = ${names.a} end`);
      } else {
        keptEntries(w, s, j, p, names, fixed, parts);
      }
    }
    setScope(w, s, policies, fixed, parts);
  }
}

/**
 * A window's admissions or a throttle's leases still counted, then the request's own. A window
 * empties a window's length after its newest admission, a throttle when its newest lease expires.
 */
function keptEntries(
  w: Writer,
  s: number,
  j: number,
  p: WindowPolicy | ConcurrencyPolicy,
  {
    b,
    n,
    o,
    h,
  }: { readonly b: string; readonly n: string; readonly o: string; readonly h: string },
  fixed: string[],
  parts: string[],
): void {
  const { uses } = w.sections[j]!;
  const x = w.sv('X', s);
  const size = ENTRY_SIZE[p.kind];
  const [own, life, after] =
    p.kind === 'window' ? ['entry', p.windowMs, p.windowMs] : [`lease${j}`, p.leaseTtlMs, 0];
  if (uses > 0 && p.kind === 'concurrency') {
    // A lease id sent as bytes is packed already: its expiry goes before it.
    w.emit(
      w.shape.binaryArguments === true
        ? `  local ${own} = admitted and pack_struct('<d', t + ${life}) .. id`
        : `  local ${own} = admitted and pack_struct('${LEASE_ENTRY}', t + ${life}, id)`,
    );
  }
  // A window counts the cost; a throttle takes one lease whatever the cost.
  const copies = w.costArg > 0 && p.kind === 'window' ? `${uses} * cost` : `${uses}`;
  const added = uses === 0 ? '0' : `(admitted and ${copies} or 0)`;
  fixed.push(b, `${n} - ${h} + 1 + ${added}`);
  parts.push(`sub(${x}, ${o} + (${h} - 1) * ${size}, ${o} + ${n} * ${size} - 1)`);
  if (uses > 0)
    parts.push(`(admitted and ${copies === '1' ? own : `rep(${own}, ${copies})`} or '')`);
  const newest = `unpack_struct('<d', ${x}, ${o} + (${n} - 1) * ${size})`;
  const stored = after === 0 ? newest : `${newest} + ${after}`;
  w.emit(
    '  do',
    '    local last = 0',
    uses > 0
      ? `    if admitted then last = t + ${life} elseif ${n} >= ${h} then last = ${stored} end`
      : `    if ${n} >= ${h} then last = ${stored} end`,
    '    if last > horizon then horizon = last end',
    '  end',
  );
}

/** The SET of a changed scope, or its DEL when it is fresh again. */
function setScope(
  w: Writer,
  s: number,
  policies: readonly Policy[],
  fixed: readonly string[],
  parts: readonly string[],
): void {
  const { shape } = w;
  const format = `'${fixedFormat(policies)}'`;
  // The signature is a constant of the script; a large plan packs through tables: a long
  // expression would need more Lua registers.
  const sig = luaBytes(signature(policies));
  const value = w.inTable
    ? `table.concat({ ${sig}, pack_struct(${format}, unpack({ ${fixed.join(', ')} })), ${parts.join(', ')} })`
    : [sig, `pack_struct(${format}, ${fixed.join(', ')})`, ...parts].join(' .. ');
  w.emit(
    '  if horizon > t then',
    ...(shape.batched === true
      ? [
          // The expiry as text, written once per call for each value it takes (the requests of
          // a call mostly share one): Redis prints a number argument with %.17g, about 2,200
          // instructions, more than the rest of the SET. One request alone gains nothing.
          `    local px = ceil(horizon - t) + ${shape.marginMs}`,
          '    local px_text = expiries[px]',
          "    if not px_text then px_text = format('%d', px); expiries[px] = px_text end",
          `    call('SET', ${w.key(s)}, ${value}, 'PX', px_text)`,
        ]
      : [`    call('SET', ${w.key(s)}, ${value}, 'PX', ceil(horizon - t) + ${shape.marginMs})`]),
    '  else',
    `    call('DEL', ${w.key(s)})`,
    '  end',
    'end',
  );
}

/**
 * Step 7: the leases the write-back dropped as expired, never given back (a throttle's entries
 * before its first still counted, in a scope written back), for the store to report: per throttle
 * that dropped any, its section (from 1, scope after scope), how many, and their expiries, after
 * the reply's numbers. Nothing when none was dropped, the usual case.
 */
function droppedLeases(w: Writer): void {
  if (!w.expiring) return;
  const { sections, v, sv, emit } = w;
  const binary = w.shape.binary === true;
  emit("local expired = ''");
  for (const [j, section] of sections.entries()) {
    if (section.policy.kind !== 'concurrency') continue;
    const [o, h] = [v('O', j), v('H', j)];
    const x = sv('X', section.scope);
    const at = `${o} + (i - 1) * ${LEASE_SIZE}`;
    // A lease's expiry is its entry's first double: as bytes, it is the reply's double already.
    const expiry = binary
      ? `sub(${x}, ${at}, ${at} + 7)`
      : `format('%.17g', (unpack_struct('<d', ${x}, ${at})))`;
    const head = binary
      ? `pack_struct('<dd', ${j + 1}, ${h} - 1)`
      : `format(',%d,%d,', ${j + 1}, ${h} - 1)`;
    emit(
      `if ${sv('D', section.scope)} and ${h} > 1 then`,
      '  local parts = {}',
      `  for i = 1, ${h} - 1 do parts[i] = ${expiry} end`,
      `  expired = expired .. ${head} .. concat(parts${binary ? '' : ", ','"})`,
      'end',
    );
  }
}

/** The reply. */
function reply(w: Writer): void {
  const { shape, sections, work, r, replyTable, v, emit } = w;
  const per = w.costArg > 0 ? ' * cost' : '';
  // Admitted: 1, the time, then (with statuses) one number per active policy that its status is
  // worked out from by the store, as the memory store works it out from its state: a window's or
  // a throttle's count after the admission, the rate policy's theoretical arrival time. Counting
  // remaining and reset in Lua cost Redis about as much as the rest of the reply.
  const raws =
    shape.statuses === false
      ? []
      : work.map((j) => {
          const { policy, uses } = sections[j]!;
          if (policy.kind === 'rate') return v('A', j);
          const added = policy.kind === 'window' ? `${uses}${per}` : `${uses}`;
          return `${v('N', j)} - ${v('H', j)} + 1 + ${added}`;
        });
  const admitted = ['1', 't', ...raws];
  // A peek replies as a refusal does, admitted or not.
  if (shape.peek !== true) {
    emit('if admitted then');
    if (shape.shadow !== undefined) {
      // Admitted, but a shadow policy would have refused: 3, that refusal's numbers, then the
      // admission's.
      const escaped = ['3', 't', 's_blocked and 2 or 1', 's_seconds', 's_refusing', ...raws];
      emit('if shadowed then');
      if (replyTable) {
        emit(`  reply = { ${escaped.join(', ')} }`);
        returnReply(w, `unpack(reply, 1, ${escaped.length})`, escaped.length, '  ');
      } else {
        returnReply(w, escaped.join(', '), escaped.length, '  ');
      }
      emit('end');
    }
    if (replyTable) {
      emit(`  reply = { ${admitted.join(', ')} }`);
      returnReply(w, `unpack(reply, 1, ${admitted.length})`, admitted.length, '  ');
    } else {
      returnReply(w, admitted.join(', '), admitted.length, '  ');
    }
    emit('end');
  }
  // Refused: the five numbers of the decision, then remaining and reset-after of each policy.
  const full = 5 + 2 * work.length;
  const numbers = replyTable
    ? `unpack(reply, 1, ${full})`
    : Array.from({ length: full }, (_, i) => r(i + 1)).join(', ');
  returnReply(w, numbers, full, '');
}

/**
 * Return `count` numbers: as little-endian doubles for a binary reply, else as text (then they
 * are in the table `reply`).
 * @param numbers - the Lua expressions of the numbers, for a binary reply
 */
function returnReply(w: Writer, numbers: string, count: number, indent: string): void {
  // Then the leases dropped expired, if any: '' costs the concatenation nothing.
  const tail = w.expiring ? ' .. expired' : '';
  if (w.shape.binary === true) {
    // Doubles: exact, and the cheapest reply to write (no number printed as text).
    w.emit(`${indent}return pack_struct('<${'d'.repeat(count)}', ${numbers})${tail}`);
    return;
  }
  // Exact: whole numbers (the usual case) with %d, one C call; else each with 17 digits.
  w.emit(
    ...[
      `for i = 1, ${count} do`,
      '  local x = reply[i]',
      '  if x % 1 ~= 0 or x >= 1e14 then',
      `    for j = 1, ${count} do reply[j] = format('%.17g', reply[j]) end`,
      `    return concat(reply, ',', 1, ${count})${tail}`,
      '  end',
      'end',
      `return format('${Array.from({ length: count }, () => '%d').join(',')}', unpack(reply, 1, ${count}))${tail}`,
    ].map((line) => indent + line),
  );
}

/** A Lua string literal of `bytes`, each as a three-digit decimal escape. */
function luaBytes(bytes: Uint8Array): string {
  return `"${Array.from(bytes, (b) => `\\${String(b).padStart(3, '0')}`).join('')}"`;
}

/** A number as Lua source that reads back as the same double. */
function lua(x: number): string {
  return String(x);
}

/**
 * Lua: give back the lease (expiry, id) from the `n` entries of a throttle at byte `from` of a
 * value; returns the value and how many entries it now holds. A lease that is not there (given
 * back already, or expired) changes nothing.
 */
const FIND_LEASE = [
  'local function give_back(x, from, n, expiry, id)',
  `  local lease = pack_struct('${LEASE_ENTRY}', expiry, id)`,
  `  local last = from + (n - 1) * ${LEASE_SIZE}`,
  '  local at = find(x, lease, from, true)',
  '  while at and at <= last do',
  `    if (at - from) % ${LEASE_SIZE} == 0 then return sub(x, 1, at - 1) .. sub(x, at + ${LEASE_SIZE}), n - 1 end`,
  '    at = find(x, lease, at + 1, true)',
  '  end',
  '  return x, n',
  'end',
];
