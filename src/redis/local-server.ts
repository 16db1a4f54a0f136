import { Redis } from "ioredis";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Starting a redis-server of our own: for the local dev stack and the tests, never for production. */
export const REDIS_INSTALL_HINT =
  "redis-server was not found on PATH. Install it with `apt-get install -y redis-server` " +
  "(Debian/Ubuntu) or `brew install redis` (macOS), or set REDIS_URL to a Redis you own.";

/** A free TCP port on 127.0.0.1, chosen by the OS. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

export interface RedisServerOptions {
  port?: number;
  /** Keep an append-only file (fsync every second), as production should. */
  appendOnly?: boolean;
}

/** A throwaway redis-server on a free loopback port, in its own temp directory. */
export async function startRedisServer(options: RedisServerOptions = {}) {
  if (!hasRedisServer()) throw new Error(REDIS_INSTALL_HINT);
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "svc-webhooks-redis-"));
  let child: ChildProcess | undefined;

  const start = async () => {
    if (child?.exitCode === null) return; // already running
    const settings = {
      port: String(port),
      bind: "127.0.0.1",
      dir,
      save: "",
      appendonly: options.appendOnly ? "yes" : "no",
      appendfsync: "everysec",
      "maxmemory-policy": "noeviction",
      daemonize: "no",
      loglevel: "warning",
    };
    const args = Object.entries(settings).flatMap(([name, value]) => [`--${name}`, value]);
    // Its own process group: a Ctrl-C at the terminal (which signals the whole foreground group)
    // must not stop Redis before the service using it has shut down; stop() ends it.
    const proc = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    child = proc;
    let output = "";
    for (const stream of [proc.stdout, proc.stderr]) stream.on("data", (d: Buffer) => (output += d.toString()));
    await waitForPong(port, proc, () => output);
  };

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (proc?.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGTERM");
    await exited;
  };

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    /** Stops the server (SIGTERM, waits for exit). Data on disk stays for `start()`. */
    stop,
    /** Starts it again on the same port and directory. */
    start,
    /** Kills it for good and removes its directory. */
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type RedisServer = Awaited<ReturnType<typeof startRedisServer>>;

async function waitForPong(port: number, proc: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited early: ${output()}`);
    const res = spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" });
    if (res.stdout.trim() === "PONG") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${output()}`);
}

/** Does a Redis answer PING at `url` within a second? */
export async function redisAnswers(url: string): Promise<boolean> {
  // commandTimeout: a listener that is not Redis accepts the connection and never answers PING.
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    commandTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Errors here only mean "no Redis there": the caller starts one.
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * The local stack's Redis: `url` when it answers, else a redis-server of our own on `port` (dev
 * keeps one across runs, so an exported REDIS_URL stays valid) or a free one (throws with the
 * install command when there is none).
 */
export async function ensureRedis(url: string | undefined, port?: number): Promise<{ url: string; started?: RedisServer }> {
  if (url && (await redisAnswers(url))) return { url };
  const started = await startRedisServer({ appendOnly: true, ...(port === undefined ? {} : { port }) });
  return { url: started.url, started };
}
