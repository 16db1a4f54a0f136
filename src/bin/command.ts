// What every command is given and may throw: its shape, the stop signal (the one place the CLI
// handles signals), and the CLI's errors with how each becomes one line and an exit code. Apart
// from cli.ts, which loads the commands: they import this, and cli.ts imports them.
import { ConfigError } from "../config/config.js";
import { HandlersModuleError } from "../worker/errors.js";

export interface Command {
  help: string;
  /** `stop` aborts at the first SIGINT, SIGTERM or SIGHUP (stopSignals): the command ends soon after, gracefully. */
  run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void>;
}

/** Bad command-line input: the CLI prints the message and exits with code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** A command that cannot do its work for a reason outside the code (nothing answers, a refused token): one line, exit 1. */
export class CommandError extends Error {
  constructor(
    message: string,
    /** The service's code when it refused the request (confirm_required, event_not_found, …). */
    readonly refusal?: string,
  ) {
    super(message);
    this.name = "CommandError";
  }
}

/**
 * Prints an error that ended a command as one line on stderr and answers the exit code: 2 for
 * bad input or configuration, 1 for the rest. A stack trace is for bugs, and even then the line
 * says what failed.
 */
export function reportError(err: unknown): number {
  if (err instanceof ConfigError || err instanceof HandlersModuleError) {
    console.error(err.message);
    return 2;
  }
  const usage = err instanceof UsageError || String((err as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS");
  console.error(`svc-webhooks: ${usage ? (err as Error).message : oneLine(err)}`);
  return usage ? 2 : 1;
}

/** An error as one line: its message (or code), and the code of its cause (fetch's ECONNREFUSED is there). */
function oneLine(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const text = err.message || (typeof code === "string" ? code : err.name);
  const cause = causeCode(err);
  // Not when the message names it already (a database that does not answer, mirror/database.ts).
  return `${text}${cause && !text.includes(cause) ? ` (${cause})` : ""}`.replace(/\s*\n\s*/g, " ");
}

/** The code of an error's cause (fetch's ECONNREFUSED), when it has one. */
export function causeCode(err: unknown): string | undefined {
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return typeof code === "string" ? code : undefined;
}

/** parseArgs' options for flags that take a value (`strings`) and switches (`booleans`). */
export function flagOptions<const S extends string, const B extends string = never>(strings: readonly S[], booleans: readonly B[] = []) {
  const typed = (names: readonly string[], type: "string" | "boolean") => Object.fromEntries(names.map((name) => [name, { type }]));
  return {
    ...(typed(strings, "string") as Record<S, { type: "string" }>),
    ...(typed(booleans, "boolean") as Record<B, { type: "boolean" }>),
  };
}

/** A flag's whole number: `fallback` when not given, else at least `min`. */
export function wholeNumber(value: string | undefined, flag: string, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`${flag} must be a whole number ≥ ${min}, not "${value}"`);
  return Number(value);
}

/** How long after the first signal a repeat is still the same keypress (see stopSignals). */
const SAME_KEYPRESS_MS = 1000;
const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;

/**
 * The one place the CLI handles signals. The first SIGINT, SIGTERM or SIGHUP (a closed terminal
 * must not leave dev's redis-server behind) aborts `stop`, which every command is given: serve and
 * dev stop gracefully within SHUTDOWN_TIMEOUT_MS, backfill ends after the page in hand (or the wait
 * it is in), a handover's wait ends. A second signal exits at once (128 + its number) unless it
 * comes within a second of the first: one Ctrl-C reaches a process run through tsx twice, from the
 * terminal's process group and forwarded by tsx, and that is still one.
 */
export function stopSignals(): { stop: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  let firstAt = 0;
  const handlers = Object.entries(SIGNALS).map(([name, number]) => {
    const handler = () => {
      if (!controller.signal.aborted) {
        firstAt = Date.now();
        controller.abort(new StopSignal(name));
      } else if (Date.now() - firstAt > SAME_KEYPRESS_MS) process.exit(128 + number);
    };
    process.on(name, handler);
    return () => process.off(name, handler);
  });
  return { stop: controller.signal, dispose: () => handlers.forEach((off) => off()) };
}

/** The reason `stop` aborted: the signal's name and time. */
class StopSignal extends Error {
  /** When it came, epoch ms: a shutdown's deadline counts from here, not from when the command saw it. */
  readonly at = Date.now();
  constructor(readonly signal: string) {
    super(`stopped by ${signal}`);
    this.name = "StopSignal";
  }
}

/** Resolves with the StopSignal once `stop` aborts. */
export function stopped(stop: AbortSignal): Promise<StopSignal> {
  const reason = () => (stop.reason instanceof StopSignal ? stop.reason : new StopSignal(String(stop.reason)));
  if (stop.aborted) return Promise.resolve(reason());
  return new Promise((resolve) => stop.addEventListener("abort", () => resolve(reason()), { once: true }));
}
