import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { databaseEnv } from "./postgres.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout JSON log line whose msg matches, logged before or after the call. */
  waitForLog(msg: string): Promise<Record<string, unknown>>;
  /** The URL of the "listening" line (logged at info: LOG_LEVEL must not be above it). */
  listening(): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs `svc-webhooks <args>` from the TypeScript sources (as `npm run dev` does). Unless `env`
 * names a database, the process gets one of its own (a schema on the run's server, else an
 * embedded one in a fresh directory), never the checkout's ./.data.
 */
export function runCli(args: string[], env: Record<string, string | undefined>, options: { ownProcessGroup?: boolean } = {}): CliProcess {
  const database = env.DATABASE_URL || env.DATA_DIR ? {} : databaseEnv();
  const child = spawn(process.execPath, ["--import", "tsx", "src/bin/cli.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...database, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // A group of its own, so a test can signal it as a terminal does (the whole foreground group).
    detached: options.ownProcessGroup ?? false,
  });
  let out = "";
  let err = "";
  let partial = "";
  const records: Record<string, unknown>[] = [];
  const waiters: { msg: string; resolve: (r: Record<string, unknown>) => void }[] = [];
  // Parse each complete line once, so a long, chatty run stays linear.
  child.stdout.on("data", (d: Buffer) => {
    const text = d.toString();
    out += text;
    const lines = (partial + text).split("\n");
    partial = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith("{")) continue;
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      records.push(record);
      for (const w of waiters.filter((w) => w.msg === record.msg)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(record);
      }
    }
  });
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const waitForLog = (msg: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const seen = records.find((r) => r.msg === msg);
      if (seen) {
        resolve(seen);
        return;
      }
      waiters.push({ msg, resolve });
      void exited.then(({ code }) => reject(new Error(`process exited (${code}) before logging "${msg}": ${err}${out}`)));
    });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForLog,
    listening: async () => String((await waitForLog("listening")).url),
  };
}
