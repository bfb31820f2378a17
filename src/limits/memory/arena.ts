/**
 * The arena in which the memory store keeps every number of its records (docs/memory-store.md
 * says why).
 * @module
 */

// Block sizes below this have their free list in an array.
const SMALL = 1_025;

/** A block allocator over one growable `Float64Array`. Offsets are in slots (8 bytes each). */
export class Arena {
  /** The slots. Replaced when the arena grows: read it again after every {@link alloc}. */
  mem: Float64Array;
  /** Slots handed out at least once; the rest of `mem` is untouched. */
  #top = 0;
  /**
   * Head of the free list of each block size, -1 when empty: an array for the small sizes that
   * records, rings and lease blocks mostly have, a map beyond. A free block holds the next one's
   * offset in its slot 0.
   */
  readonly #small: number[] = new Array<number>(SMALL).fill(-1);
  readonly #large = new Map<number, number>();
  #used = 0;

  /** @param initialSlots - slots to start with */
  constructor(initialSlots = 4_096) {
    this.mem = new Float64Array(initialSlots);
  }

  /** Slots in blocks currently handed out. */
  get usedSlots(): number {
    return this.#used;
  }

  /**
   * Take an array whose first `top` slots hold every live block, with no free block between
   * them; every offset handed out before is void. Free lists start empty.
   * @param mem - the new slots
   * @param top - slots in use from its start
   */
  replace(mem: Float64Array, top: number): void {
    this.mem = mem;
    this.#top = top;
    this.#used = top;
    this.#small.fill(-1);
    this.#large.clear();
  }

  /**
   * A block of `size` slots, all 0.
   * @param size - whole number >= 1
   * @returns its offset in {@link mem}
   */
  alloc(size: number): number {
    const at = this.allocDirty(size);
    this.mem.fill(0, at, at + size);
    return at;
  }

  /**
   * A block of `size` slots holding whatever a freed block held: for a ring or a list whose owner
   * reads only the slots it wrote.
   * @param size - whole number >= 1
   * @returns its offset in {@link mem}
   */
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

  /**
   * Give a block back; it must not be used again.
   * @param at - its offset
   * @param size - its size, as allocated
   */
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

/**
 * Copy `size` slots of `from` at `at` into `to` at `top` (a loop for the small blocks that most
 * are, without the view object that `set` would need).
 */
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
