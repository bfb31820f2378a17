/**
 * The arena holding every number of the memory store's records (docs/memory-store.md says why).
 * @module
 */

const SMALL = 1_025;

/** A block allocator over one growable `Float64Array`. Offsets are in slots (8 bytes each). */
export class Arena {
  /** The slots. Replaced when the arena grows: read it again after every {@link alloc}. */
  mem: Float64Array;
  /** Slots handed out at least once; the rest of `mem` is untouched. */
  #top = 0;
  // Free list heads by block size (-1 when empty), an array for the common small sizes; a free
  // block holds the next one's offset in its slot 0.
  readonly #small: number[] = new Array<number>(SMALL).fill(-1);
  readonly #large = new Map<number, number>();
  #used = 0;

  constructor(initialSlots = 4_096) {
    this.mem = new Float64Array(initialSlots);
  }

  /** Slots in blocks currently handed out. */
  get usedSlots(): number {
    return this.#used;
  }

  /** Take `mem`, whose first `top` slots are every live block; every earlier offset is void. */
  replace(mem: Float64Array, top: number): void {
    this.mem = mem;
    this.#top = top;
    this.#used = top;
    this.#small.fill(-1);
    this.#large.clear();
  }

  /** The offset of a new block of `size` slots, all 0. */
  alloc(size: number): number {
    const at = this.allocDirty(size);
    this.mem.fill(0, at, at + size);
    return at;
  }

  /** A block not cleared: for a ring or list whose owner reads only the slots it wrote. */
  allocDirty(size: number): number {
    this.#used += size;
    const head = size < SMALL ? (this.#small[size] as number) : (this.#large.get(size) ?? -1);
    if (head !== -1) {
      const next = this.mem[head] as number;
      if (size < SMALL) this.#small[size] = next;
      else if (next === -1) this.#large.delete(size);
      else this.#large.set(size, next);
      return head;
    }
    const at = this.#top;
    if (at + size > this.mem.length) {
      const grown = new Float64Array(Math.max(at + size, Math.ceil(this.mem.length * 1.25)));
      grown.set(this.mem);
      this.mem = grown;
    }
    this.#top = at + size;
    return at;
  }

  /** Give a block back, with its size as allocated; it must not be used again. */
  free(at: number, size: number): void {
    this.#used -= size;
    if (size < SMALL) {
      this.mem[at] = this.#small[size] as number;
      this.#small[size] = at;
    } else {
      this.mem[at] = this.#large.get(size) ?? -1;
      this.#large.set(size, at);
    }
  }
}

/** A loop for small blocks, sparing the view object that `set` needs. */
export function copySlots(
  from: Float64Array,
  at: number,
  size: number,
  to: Float64Array,
  top: number,
): void {
  if (size > 64) to.set(from.subarray(at, at + size), top);
  else for (let i = 0; i < size; i++) to[top + i] = from[at + i] as number;
}
