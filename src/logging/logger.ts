import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger } from "pino";

export interface LoggerOptions {
  level?: string;
  /** Values that must never appear in a log line (signing secrets, API key, admin token). */
  secrets?: readonly string[];
  /** Where lines go; stdout by default (bounded: see createLogDestination). Tests pass a stream to capture lines. */
  destination?: DestinationStream;
  name?: string;
  /** Fields added to every line (the active trace's ids when tracing is on); none by default. */
  mixin?: () => object;
}

const REDACTED = "[Redacted]";

// Header names as Hono and Node give them (lower-case); pino's redact paths are case-sensitive.
const REDACT_PATHS = [
  "req.headers.authorization",
  'req.headers["x-svc-signature"]',
  "headers.authorization",
  'headers["x-svc-signature"]',
  "authorization",
  "signature",
  "apiKey",
  "secret",
  "secrets",
  "token",
  "*.apiKey",
  "*.secret",
  "*.token",
];

/**
 * A pino logger that redacts known secret-bearing paths and, as a last line of defence, replaces
 * any occurrence of a configured secret value in the serialized line (an error message or a
 * stray field can carry one where no redact path would catch it). A line too long for the log
 * writer (which would drop it whole) is cut to a bounded one instead (cutLongLine).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  // Each secret as it appears raw and, where JSON escaping changes it (quotes, backslashes), escaped.
  const needles = (options.secrets ?? [])
    .filter((s) => s.length >= 4)
    .flatMap((secret) => {
      const escaped = JSON.stringify(secret).slice(1, -1);
      return escaped === secret ? [secret] : [secret, escaped];
    });
  const scrub =
    needles.length === 0
      ? undefined
      : (line: string) => {
          let out = line;
          for (const needle of needles) if (out.includes(needle)) out = out.split(needle).join(REDACTED);
          return out;
        };
  return pino(
    {
      level: options.level ?? "info",
      name: options.name,
      ...(options.mixin ? { mixin: options.mixin } : {}),
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      // Scrubbed before it is cut, so a cut never leaves half a secret for the scrub to miss.
      hooks: { streamWrite: scrub ? (line: string) => cutLongLine(scrub(line)) : cutLongLine },
    },
    options.destination ?? createLogDestination(),
  );
}

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

export interface LogDestinationOptions {
  /** File descriptor to write to; stdout by default. */
  fd?: number;
  /** Most bytes held while the reader (a pipe, a log shipper) is slower than we write. */
  maxBufferBytes?: number;
}

/** 4 MiB: minutes of ordinary request lines, a fraction of the process's memory. */
export const DEFAULT_LOG_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * Lines are written in batches of this many bytes (about 15 request lines) rather than one write
 * each: at thousands of requests a second, a write per line (a thread-pool round trip each) was a
 * measurable share of the edge's CPU. This is pino's "asynchronous logging" setup.
 */
export const LOG_BATCH_BYTES = 4096;
/** Longest a line waits in a batch: a quiet service's lines still show within a fraction of a second. */
export const LOG_FLUSH_INTERVAL_MS = 200;

/**
 * pino's asynchronous writer, batched (LOG_BATCH_BYTES, LOG_FLUSH_INTERVAL_MS; what is buffered is
 * written synchronously when the process exits) and bounded: when whoever reads our stdout
 * falls behind, lines are held up to `maxBufferBytes` and dropped beyond it, rather than held
 * without limit (a flood of requests once took RSS from 100 to 700 MiB this way). Losing log
 * lines under a flood beats losing the process.
 *
 * @example createLogger({ destination: createLogDestination({ maxBufferBytes: 1 << 20 }) })
 */
export function createLogDestination(options: LogDestinationOptions = {}): DestinationStream {
  const destination = pino.destination({
    fd: options.fd ?? 1,
    sync: false,
    maxLength: options.maxBufferBytes ?? DEFAULT_LOG_BUFFER_BYTES,
    minLength: LOG_BATCH_BYTES,
  });
  // pino's documented pairing with minLength: a timer flushes what a quiet moment left buffered.
  const flusher = setInterval(() => {
    try {
      destination.flush();
    } catch {
      clearInterval(flusher); // destroyed: nothing more will be written
    }
  }, LOG_FLUSH_INTERVAL_MS).unref();
  destination.once("close", () => clearInterval(flusher));
  return destination;
}

/**
 * Human-readable log lines for a person at a terminal (`npm run dev`): pino-pretty when stdout
 * is a TTY and the package is installed (it is a dev dependency, absent from the production
 * image); otherwise undefined, and the logger writes JSON lines as in production.
 */
export async function prettyDestinationForTerminal(stream: NodeJS.WriteStream = process.stdout): Promise<DestinationStream | undefined> {
  if (!stream.isTTY) return undefined;
  try {
    const { default: pretty } = await import("pino-pretty");
    return pretty({ colorize: true, translateTime: "HH:MM:ss.l", ignore: "pid,hostname", destination: stream });
  } catch {
    return undefined;
  }
}
