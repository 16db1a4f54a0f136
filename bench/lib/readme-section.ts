import { readFileSync, writeFileSync } from "node:fs";

const START = "<!-- bench:start -->";
const END = "<!-- bench:end -->";

/**
 * Replaces what stands between the bench markers in `path` (the README's performance section)
 * with `lines`, so its figures are always a run's own, never edited by hand. False when the
 * markers are missing.
 */
export function writeReadmeSection(path: string, lines: readonly string[]): boolean {
  const text = readFileSync(path, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return false;
  writeFileSync(path, `${text.slice(0, start + START.length)}\n${lines.join("\n")}\n${text.slice(end)}`);
  return true;
}
