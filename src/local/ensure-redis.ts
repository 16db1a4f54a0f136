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
 * The local stack's Redis: `url` when it answers, else a redis-server of our own on `port` (dev
 * keeps one across runs, so an exported REDIS_URL stays valid) or a free one (throws with the
 * install command when there is none).
 */
export async function ensureRedis(url: string | undefined, port?: number): Promise<{ url: string; started?: RedisServer }> {
  if (url && (await redisAnswers(url))) return { url };
  const started = await startRedisServer({ appendOnly: true, ...(port === undefined ? {} : { port }) });
  return { url: started.url, started };
}
