import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createHandlerRegistry } from "../events/registry.js";
import type { EventHandlers, HandlerContext } from "./handler-context.js";

export class HandlersModuleError extends Error {
  readonly code = "invalid_handlers_module";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HandlersModuleError";
  }
}

/**
 * Loads HANDLERS_MODULE: any ES module (or CommonJS file) whose default export maps event types
 * (and '*') to handlers: a function, a `{ name, handle }`, or an array of them (several handlers
 * for one type, each with its own name; docs/handlers.md). It needs nothing from this package,
 * so it can live anywhere.
 */
export async function loadHandlersModule(path: string, cwd = process.cwd(), version?: number): Promise<EventHandlers> {
  // A new query string is a new module to the ESM loader: how dev re-reads an edited file (its own
  // imports stay cached, and each version stays in memory: fine for a dev session).
  const url = pathToFileURL(isAbsolute(path) ? path : resolve(cwd, path)).href + (version === undefined ? "" : `?v=${version}`);
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (err) {
    throw new HandlersModuleError(`HANDLERS_MODULE ${path} could not be loaded: ${(err as Error).message}`, { cause: err });
  }
  const map = mod.default;
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    throw new HandlersModuleError(`HANDLERS_MODULE ${path} must export default an object mapping event types to handlers`);
  }
  // Registered once here, only to check it: a handler that is no function, a bad or duplicate
  // name, is refused at load with the module's path, not later inside the worker.
  try {
    createHandlerRegistry<HandlerContext>().use(map, "user");
  } catch (err) {
    throw new HandlersModuleError(`HANDLERS_MODULE ${path}: ${(err as Error).message}`, { cause: err });
  }
  return map;
}
