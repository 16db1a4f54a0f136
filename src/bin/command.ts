// What every command is given and may throw: its shape, the stop signal (the one place the CLI
// handles signals), and the CLI's errors with how each becomes one line and an exit code. Apart
// from cli.ts, which loads the commands: they import this, and cli.ts imports them.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { NamedError } from "../errors.js";
import { ConfigError } from "../config/config.js";
import { HandlersModuleError } from "../worker/errors.js";
import { shortened } from "../base/text.js";

/**
 * A command. One that `answers` ends with an Answer: it takes `--json` (cli.ts removes it from
 * argv before `run`), and printAnswer says the answer as JSON or as its sentence. `stop` aborts at
 * the first SIGINT, SIGTERM or SIGHUP (stopSignals): the command ends soon after, gracefully.
 */
export type Command =
  | { help: string; answers?: false; run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal, out: Output): Promise<void> }
  | { help: string; answers: true; run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal, out: Output): Promise<Answer> };

/**
 * What a command found or did: `value` is the document `--json` prints (the operator API's own
 * answer where there is one), `sentence` the same told to a person. A command returns it and
 * prints neither: printAnswer chooses, in one place.
 */
export const answer = (value: unknown, sentence: string) => ({ value, sentence });
export type Answer = ReturnType<typeof answer>;

/**
 * How a command's answer is printed, and where lines for people go meanwhile (a dry run's list of
 * events). `json` (--json): stdout holds one JSON document, the answer's value; lines for people
 * go to stderr. `line`: a line for people, on stdout, or stderr with --json so stdout stays one document.
 */
export const output = (json: boolean) => ({ json, line: (text: string) => (json ? console.error(text) : console.log(text)) });
export type Output = ReturnType<typeof output>;

/** Prints a command's answer on stdout: its value as JSON with --json, else its sentence. */
export function printAnswer(answer: Answer, out: Output): void {
  // A list with nothing in it is no line for people (replay list says its count on stderr).
  if (out.json || answer.sentence !== "") console.log(out.json ? JSON.stringify(answer.value) : answer.sentence);
}

/**
 * A word the user typed, as an error line shows it: in quotes, control characters escaped and cut
 * at 80 characters, so a stray newline or a pasted blob never breaks the one line.
 */
export const quoted = (word: string) => JSON.stringify(shortened(word, 80));

/** `text` parsed as JSON, else `fallback` (text from a flag or an answer may be anything). */
export function parsedJson(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

/** Rows under a header, each column as wide as its widest cell (the last column unpadded). */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [header, ...rows].map((cells) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

/** `n` and the noun, plural when n is not 1: "1 event", "4 events". */
export const plural = (n: number, noun: string, plural = `${noun}s`) => `${n} ${n === 1 ? noun : plural}`;

/**
 * Edit distance between two words: insertions, deletions, substitutions and swaps of two
 * neighbouring letters (`ulr` for `url`), each one edit (Levenshtein with transpositions).
 */
export function editDistance(a: string, b: string): number {
  // d(i, j): the distance between a's first i letters and b's first j.
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number) => d[i]?.[j] ?? 0;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(at(i, j), at(i - 2, j - 2) + 1);
    }
  }
  return at(a.length, b.length);
}

/**
 * The known word nearest to `word`, when it is near enough to be a slip (one edit in four letters,
 * at least one): the "did you mean" of an unknown command or flag.
 */
export function closest(word: string, known: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(word.length / 4));
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(word.toLowerCase(), name.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** ", did you mean X?" for a slip near a known word, else "". */
export const didYouMean = (word: string, known: readonly string[]) => {
  const near = closest(word, known);
  return near ? `; did you mean ${near}?` : "";
};

/**
 * parseArgs, with an unknown flag answered as one line naming the nearest known one
 * (`unknown option --dryrun; did you mean --dry-run?`).
 */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    if ((err as { code?: unknown }).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw err;
    const flag = /'([^']+)'/.exec((err as Error).message)?.[1] ?? "";
    const known = Object.keys(config.options ?? {}).map((name) => `--${name}`);
    throw new UsageError(
      `unknown option ${quoted(flag).slice(1, -1)}${didYouMean(flag.split("=")[0] ?? flag, known)} (--help lists the options)`,
    );
  }
}

/** Bad command-line input: the CLI prints the message and exits with code 2. */
export class UsageError extends NamedError {}

/** A command that cannot do its work for a reason outside the code (nothing answers, a refused token): one line, exit 1. */
export class CommandError extends NamedError {
  constructor(
    message: string,
    /** The service's code when it refused the request (confirm_required, event_not_found, …). */
    readonly refusal?: string,
  ) {
    super(message);
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
class StopSignal extends NamedError {
  /** When it came, epoch ms: a shutdown's deadline counts from here, not from when the command saw it. */
  readonly at = Date.now();
  constructor(readonly signal: string) {
    super(`stopped by ${signal}`);
  }
}

/** Resolves with the StopSignal once `stop` aborts. */
export function stopped(stop: AbortSignal): Promise<StopSignal> {
  const reason = () => (stop.reason instanceof StopSignal ? stop.reason : new StopSignal(String(stop.reason)));
  if (stop.aborted) return Promise.resolve(reason());
  return new Promise((resolve) => stop.addEventListener("abort", () => resolve(reason()), { once: true }));
}
