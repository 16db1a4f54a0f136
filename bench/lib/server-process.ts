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

/** Starts a bench server (its own process, so load and server do not share an event loop). */
export function startServerProcess(script: string, env: Record<string, string>): Promise<ServerProcess> {
  // BENCH_CPU_PROF=<dir>: each server process writes a V8 CPU profile there when it stops.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", script], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error(`${script} did not start: ${err}`)), 20_000);
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
            if (child.exitCode !== null) {
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
