// A duration as a person reads it, the one wording the console, the health page and the CLI's
// progress lines share.

/**
 * Seconds in the largest unit that fits and the next one down, whole: 59 s, 1 min 55 s, 1 h 30 min,
 * 2 d 12 h. Two units keep a threshold exact enough to read (5,400 s is "1 h 30 min", not "1 h").
 */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  const i = DURATION_UNITS.findIndex(([size]) => s >= size);
  const [size, name] = DURATION_UNITS[i] ?? [60, "min"];
  const [nextSize, nextName] = DURATION_UNITS[i + 1] ?? [1, "s"];
  const rest = Math.floor((s % size) / nextSize);
  return `${Math.floor(s / size)} ${name}${rest > 0 ? ` ${rest} ${nextName}` : ""}`;
}

const DURATION_UNITS: readonly (readonly [number, string])[] = [
  [86_400, "d"],
  [3600, "h"],
  [60, "min"],
];
