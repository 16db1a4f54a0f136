import { watch } from "node:fs";
import { basename, dirname, isAbsolute, resolve } from "node:path";
import type { Logger } from "pino";
import type { EventHandlers } from "../worker/handlers.js";
import { loadHandlersModule } from "../worker/handlers.js";

/** Longest load error a reload logs: a syntax error's message can quote the whole file. */
const MAX_ERROR_CHARS = 500;

export interface HandlersModuleWatch {
  stop(): void;
}

/**
 * Watches HANDLERS_MODULE while `npm run dev` runs and hands each edited version to `apply` (the
 * worker's reloadHandlers, which logs what it registered). A module that does not load is one
 * error line and nothing else: the handlers in place keep running. The directory is watched, not
 * the file, because editors often save by writing a new file and renaming it over the old one.
 */
export function watchHandlersModule(options: {
  path: string;
  cwd?: string;
  apply: (handlers: EventHandlers) => void;
  logger: Logger;
  /** Editors save in several writes: one reload after the last of them (default 100 ms). */
  debounceMs?: number;
}): HandlersModuleWatch {
  const { path, logger, apply } = options;
  const cwd = options.cwd ?? process.cwd();
  const file = isAbsolute(path) ? path : resolve(cwd, path);
  let version = 0;
  let timer: NodeJS.Timeout | undefined;
  // One reload at a time, in the order of the changes.
  let reloading = Promise.resolve();

  const reload = async () => {
    version += 1;
    try {
      apply(await loadHandlersModule(file, cwd, version));
    } catch (err) {
      const message = ((err as Error).message.split("\n")[0] ?? "").slice(0, MAX_ERROR_CHARS);
      logger.error({ module: path, version }, `HANDLERS_MODULE not reloaded (the previous handlers keep running): ${message}`);
    }
  };
  const watcher = watch(dirname(file), (_event, name) => {
    if (name !== null && name !== basename(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      reloading = reloading.then(reload);
    }, options.debounceMs ?? 100);
  });
  watcher.on("error", (err) => logger.warn({ module: path, err: err.message }, "HANDLERS_MODULE is no longer watched"));
  return {
    stop() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
