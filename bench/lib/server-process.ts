import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { rssMiB } from "../../test/helpers/rss.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Resident set size in MiB, from /proc. */
  rssMiB(): number;
  stop(): Promise<void>;
}

/**
 * Starts a bench server (its own process, so load and server do not share an event loop).
 * `cwd`: the checkout `script` belongs to, this one by default (the A/B row runs an older commit's).
 * `startMs`: how long it may take to print READY (a first start in a fresh checkout creates its
 * embedded database, which takes a minute on a loaded machine).
 */
export function startServerProcess(
  script: string,
  env: Record<string, string>,
  { cwd = ROOT, startMs = 60_000 }: { cwd?: string; startMs?: number } = {},
): Promise<ServerProcess> {
  // BENCH_CPU_PROF=<dir>: each server process writes a V8 CPU profile there when it stops.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", script], {
    cwd,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => {
      // Stop it too, or it would go on writing (its data directory, say) while the bench cleans up.
      child.kill("SIGKILL");
      reject(new Error(`${script} did not start within ${startMs / 1000} s: ${err}`));
    }, startMs);
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      const m = /READY (\S+)/.exec(err);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        url: m[1]!,
        child,
        rssMiB: () => rssMiB(child.pid!),
        stop: () =>
          new Promise<void>((done) => {
            // Exited already: by a code, or by a signal (exitCode stays null then, and "exit" will not come again).
            if (child.exitCode !== null || child.signalCode !== null) {
              done();
              return;
            }
            child.once("exit", () => done());
            child.kill("SIGTERM");
            setTimeout(() => child.kill("SIGKILL"), 5000).unref();
          }),
      });
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}): ${err}`)));
  });
}
