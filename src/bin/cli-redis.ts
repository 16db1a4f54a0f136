import type { Config } from "../config/config.js";
import { createRedisConnection, type RedisClient, printableRedisUrl } from "../redis/redis.js";
import { CommandError } from "./command-error.js";

/** How long a command waits for Redis before it says so and stops. */
const READY_TIMEOUT_MS = 2000;

/**
 * A worker connection for a one-off command, once Redis answered: its errors never reach the
 * terminal as traces, and a Redis that does not answer within 2 s ends the command with one line.
 */
export async function openCliRedis(config: Pick<Config, "redisUrl" | "redisCluster">): Promise<RedisClient> {
  const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
  let lastError = "";
  connection.on("error", (err: Error) => (lastError = (err as Error & { code?: string }).code ?? err.message));
  let timer: NodeJS.Timeout | undefined;
  const ready = await Promise.race([
    new Promise<boolean>((resolve) => connection.once("ready", () => resolve(true))),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  if (!ready) {
    connection.disconnect();
    throw new CommandError(
      `Redis at ${printableRedisUrl(config.redisUrl)} does not answer${lastError ? ` (${lastError})` : ""}; set REDIS_URL (\`svc-webhooks dev\` prints its own)`,
    );
  }
  return connection;
}
