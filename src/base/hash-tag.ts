// Redis Cluster's hash tags, a fact of Redis that the config (checking a key prefix) and the
// connections (building keys) both read.

/**
 * The part of a key Redis Cluster hashes to pick its slot: the text between the first `{` and the
 * first `}` after it, when that text is not empty; otherwise the whole key. Keys with the same
 * hashed part live in the same slot, which a Lua script (or MULTI) touching several keys needs.
 * Returns the tag, or undefined when the key has none (and is hashed whole).
 *
 * @example
 * hashTagOf("{svc}:events:wait") // "svc"
 * hashTagOf("svc:upstream:{ab12}:log") // "ab12"
 * hashTagOf("svc:{}:x") // undefined: an empty tag does not count
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf("{");
  if (open === -1) return undefined;
  const close = key.indexOf("}", open + 1);
  // "{}" (close right after open) is no tag: Redis hashes the whole key then.
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}
