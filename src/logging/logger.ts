import { pino, type DestinationStream, type Logger } from "pino";
import { cutLongLine } from "./cut-long-line.js";
import { createLogDestination } from "./log-destination.js";

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
 * writer (which would drop it whole) is cut to a bounded one instead (cut-long-line.ts).
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
