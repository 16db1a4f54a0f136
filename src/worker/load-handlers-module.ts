import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { EventHandlers } from "./handler-context.js";

export class HandlersModuleError extends Error {
  readonly code = "invalid_handlers_module";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HandlersModuleError";
  }
}

/**
 * Loads HANDLERS_MODULE: any ES module (or CommonJS file) whose default export maps event types
 * (and '*') to functions. It needs nothing from this package, so it can live anywhere.
 */
export async function loadHandlersModule(path: string, cwd = process.cwd()): Promise<EventHandlers> {
  const url = pathToFileURL(isAbsolute(path) ? path : resolve(cwd, path)).href;
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (err) {
    throw new HandlersModuleError(`HANDLERS_MODULE ${path} could not be loaded: ${(err as Error).message}`, { cause: err });
  }
  const map = mod.default;
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    throw new HandlersModuleError(`HANDLERS_MODULE ${path} must export default an object mapping event types to functions`);
  }
  const wrong = Object.entries(map)
    .filter(([, v]) => typeof v !== "function")
    .map(([k]) => k);
  if (wrong.length > 0) throw new HandlersModuleError(`HANDLERS_MODULE ${path}: the handlers for ${wrong.join(", ")} are not functions`);
  return map as EventHandlers;
}
