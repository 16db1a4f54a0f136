import type { Cluster, Redis } from "ioredis";

export interface ScriptDefinition {
  /** Omitted when it varies per call: the caller then passes the key count as the first argument. */
  numberOfKeys?: number;
  lua: string;
}

/**
 * Defines Lua scripts as commands of `redis` and returns it typed as `T`, which names them. ioredis
 * sends EVALSHA after the first call and falls back to EVAL when the script cache was flushed.
 * defineCommand is per connection: a script already defined there is left alone, so factories
 * sharing one connection may each call this.
 */
export function defineScripts<T>(redis: Redis | Cluster, scripts: Record<keyof T & string, ScriptDefinition>): T {
  for (const [name, definition] of Object.entries<ScriptDefinition>(scripts)) {
    if (!(name in redis)) redis.defineCommand(name, definition);
  }
  return redis as unknown as T;
}
