import { Redis } from "ioredis";
import { startRedisServer, type RedisServer } from "./redis-server.js";

/** Does a Redis answer PING at `url` within a second? */
export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
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
 * The local stack's Redis: `url` when it answers, else a redis-server of our own on a free port
 * (throws with the install command when there is none).
 */
export async function ensureRedis(url: string | undefined): Promise<{ url: string; started?: RedisServer }> {
  if (url && (await redisAnswers(url))) return { url };
  const started = await startRedisServer({ appendOnly: true });
  return { url: started.url, started };
}
