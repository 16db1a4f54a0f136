import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const LUA = fileURLToPath(new URL("./pool.lua", import.meta.url));

export interface WrkResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** non-2xx/3xx answers, timeouts and socket errors together */
  errors: number;
}

export function assertWrk(): void {
  if (spawnSync("wrk", ["--version"]).error) {
    throw new Error("wrk is not installed: `apt-get install -y wrk` (Debian/Ubuntu) or `brew install wrk`");
  }
}

/** Runs wrk against `url` for `seconds` with requests from `poolFile`. Bounded: wrk stops itself. */
export function runWrk(url: string, poolFile: string, opts: { seconds: number; connections: number; threads: number }): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const args = [
      "-t",
      String(opts.threads),
      "-c",
      String(opts.connections),
      "-d",
      `${opts.seconds}s`,
      "--timeout",
      "5s",
      "-s",
      LUA,
      url,
      "--",
      poolFile,
      String(opts.threads),
    ];
    const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("exit", () => {
      const line = out.split("\n").find((l) => l.startsWith("WRK_JSON "));
      if (!line) {
        reject(new Error(`wrk printed no summary:\n${out}`));
        return;
      }
      const s = JSON.parse(line.slice(9)) as Record<string, number>;
      resolve({
        requests: s.requests!,
        rps: s.requests! / (s.duration_us! / 1e6),
        p50Ms: s.p50_us! / 1000,
        p99Ms: s.p99_us! / 1000,
        maxMs: s.max_us! / 1000,
        errors: s.errors_status! + s.errors_timeout! + s.errors_connect! + s.errors_read! + s.errors_write!,
      });
    });
  });
}
