// How a command learns that it is asked to stop: one AbortSignal for every command (cli-main.ts
// installs it), and when the signal came, so a shutdown's deadline counts from then.

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
export class StopSignal extends Error {
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
