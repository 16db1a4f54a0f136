import { expectDefined } from "../expect-defined.js";

/** mulberry32: a tiny seeded PRNG, so the same seed gives the same sandbox. */
export function seededRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => expectDefined(items[Math.floor(next() * items.length)], "pick() needs a non-empty list"),
    chance: (p: number) => next() < p,
    id: (prefix: string) =>
      `${prefix}_${Math.floor(next() * 36 ** 8)
        .toString(36)
        .padStart(8, "0")}`,
  };
}
export type Random = ReturnType<typeof seededRandom>;
