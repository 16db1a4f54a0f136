/**
 * Longest log line written as is, in characters: far above any ordinary line (a request line is
 * ~300), far below the log writer's 4 MiB buffer, which drops a line longer than itself whole.
 */
export const MAX_LOG_LINE_CHARS = 64 * 1024;
/** Longest string kept in a cut line (an error's message or stack, a field): the rest is cut. */
export const MAX_LOG_STRING_CHARS = 8 * 1024;

/**
 * A serialized pino line (JSON and a newline) of at most MAX_LOG_LINE_CHARS, still one JSON
 * object: a longer line has each string over MAX_LOG_STRING_CHARS cut (ending `…[cut N chars]`)
 * and `"cut": { "chars": <original length> }` added; if that is still too long, only its level,
 * time, message and `cut` are kept. Ordinary lines pay one length comparison.
 */
export function cutLongLine(line: string): string {
  if (line.length <= MAX_LOG_LINE_CHARS) return line;
  const cut = { chars: line.length };
  const object = parseObject(line);
  // pino writes JSON objects only; anything else keeps its head as text.
  if (!object) return JSON.stringify({ cut, head: cutString(line) }) + "\n";
  const shortened = JSON.stringify({ ...(cutStrings(object) as Record<string, unknown>), cut });
  if (shortened.length <= MAX_LOG_LINE_CHARS) return shortened + "\n";
  const { level, time, msg } = object;
  return JSON.stringify({ level, time, msg: typeof msg === "string" ? cutString(msg) : undefined, cut }) + "\n";
}

function parseObject(line: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function cutString(value: string): string {
  if (value.length <= MAX_LOG_STRING_CHARS) return value;
  return `${value.slice(0, MAX_LOG_STRING_CHARS)}…[cut ${value.length - MAX_LOG_STRING_CHARS} chars]`;
}

function cutStrings(value: unknown): unknown {
  if (typeof value === "string") return cutString(value);
  if (Array.isArray(value)) return value.map(cutStrings);
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, cutStrings(v)]));
  return value;
}
