import { ConsoleFilterError } from "./console-filter-error.js";

/** The presets of every time filter in the console. */
export const RANGE_PRESETS = { "1h": 3600_000, "24h": 86_400_000, "7d": 604_800_000 } as const;
export type RangePreset = keyof typeof RANGE_PRESETS | "all";
export const RANGE_LABELS: Record<RangePreset, string> = { "1h": "last hour", "24h": "last 24 h", "7d": "last 7 d", all: "all time" };

/** A preset's name from a query parameter, strictly. */
export function parseRangePreset(text: string | undefined, fallback: RangePreset): RangePreset {
  if (text === undefined || text === "") return fallback;
  if (text === "all" || text in RANGE_PRESETS) return text as RangePreset;
  throw new ConsoleFilterError("range", `range must be one of ${[...Object.keys(RANGE_PRESETS), "all"].join(", ")}`);
}

/** Where a preset starts (undefined: all time). */
export function presetSince(preset: RangePreset, now: Date): Date | undefined {
  return preset === "all" ? undefined : new Date(now.getTime() - RANGE_PRESETS[preset]);
}

/** Refuses parameters a page does not know, so a typo is a 400 rather than an unfiltered page. */
export function refuseUnknown(params: Record<string, string>, known: readonly string[]): void {
  for (const name of Object.keys(params))
    if (!known.includes(name)) throw new ConsoleFilterError(name, `unknown parameter ${name}; this page takes ${known.join(", ")}`);
}
