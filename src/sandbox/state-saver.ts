import { rename, writeFile } from "node:fs/promises";
import type { Logger } from "pino";

/**
 * Writes `json()` to `file` every `intervalMs` while `changes()` moved since the last write, and
 * once more at `stop()`. Each write replaces the file whole (a temporary file renamed over it), so
 * a crash leaves the previous save, never half of one. A failed write is a warning: the sandbox
 * goes on, and its next save tries again.
 */
export function startStateSaver(opts: {
  file: string;
  json: () => string;
  changes: () => number;
  /** Whether `file` already holds the current records (they were just loaded from it). */
  current: boolean;
  intervalMs: number;
  logger: Logger | undefined;
}): { stop(): Promise<void> } {
  let saved = opts.current ? opts.changes() : -1;
  let running: Promise<void> | undefined;
  const save = (): Promise<void> => {
    const at = opts.changes();
    if (running || at === saved) return running ?? Promise.resolve();
    const tmp = `${opts.file}.tmp`;
    running = writeFile(tmp, opts.json())
      .then(() => rename(tmp, opts.file))
      .then(
        () => void (saved = at),
        (err: unknown) => opts.logger?.warn({ err: (err as Error).message, file: opts.file }, "sandbox state not saved"),
      )
      .finally(() => (running = undefined));
    return running;
  };
  // A fresh start is on disk at once: a crash before the first interval still restarts from it.
  void save();
  const timer = setInterval(() => void save(), opts.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await save();
    },
  };
}
