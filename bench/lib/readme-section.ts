import { readFileSync, writeFileSync } from "node:fs";

/**
 * Replaces what stands between the bench markers in `path` (the README's performance section,
 * or the section `name`: `<!-- bench:name:start -->`) with `lines`, so its figures are always a
 * run's own, never edited by hand. False when the markers are missing.
 */
export function writeReadmeSection(path: string, lines: readonly string[], name?: string): boolean {
  const START = name ? `<!-- bench:${name}:start -->` : "<!-- bench:start -->";
  const END = name ? `<!-- bench:${name}:end -->` : "<!-- bench:end -->";
  const text = readFileSync(path, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return false;
  writeFileSync(path, `${text.slice(0, start + START.length)}\n${lines.join("\n")}\n${text.slice(end)}`);
  return true;
}
