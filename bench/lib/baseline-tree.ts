import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The last commit before tracing landed ("before tracing"): the A/B row (c₀) runs its edge, so
 * "tracing off costs nothing" is measured against code that had no tracing at all.
 */
export const BEFORE_TRACING = "65770a2";

/** The source of an older commit, extracted for the bench to run, and how to remove it. */
export type BaselineTree = { dir: string; commit: string; remove(): void } | { skipped: string };

/**
 * Extracts `commit` into a temporary directory with `git archive` (nothing is added to the
 * repository's worktrees or index) and links this checkout's node_modules into it: tracing only
 * added dependencies, so the old code finds everything it imports. Returns why not when git, the
 * repository or the commit is missing (a tarball of the project, a shallow clone).
 */
export function extractBaselineTree(commit: string = BEFORE_TRACING): BaselineTree {
  const git = (...args: string[]) => spawnSync("git", ["-C", ROOT, ...args], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  const resolved = git("rev-parse", "--verify", "--quiet", `${commit}^{commit}`);
  if (resolved.error) return { skipped: "git is not installed" };
  if (resolved.status !== 0) return { skipped: `commit ${commit} is not in this checkout (no .git, or a shallow clone)` };
  if (!existsSync(join(ROOT, "node_modules"))) return { skipped: "node_modules is missing (run npm ci)" };
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-before-tracing-"));
  const remove = () => rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  // git archive | tar -x, without a shell: archive to a file in the directory, then unpack it.
  const tar = join(dir, "source.tar");
  const archived = git("archive", "--format=tar", "-o", tar, resolved.stdout.trim());
  const step = archived.status === 0 ? spawnSync("tar", ["-xf", tar, "-C", dir], { encoding: "utf8" }) : archived;
  if (step.status !== 0) {
    remove();
    return { skipped: `could not extract ${commit}: ${step.stderr.trim().split("\n")[0] ?? ""}` };
  }
  rmSync(tar);
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  return { dir, commit: resolved.stdout.trim().slice(0, 7), remove };
}
