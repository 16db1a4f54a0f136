import { AsyncLocalStorage } from "node:async_hooks";
import type { Logger } from "pino";
import { errorMessage } from "../events/dispatch.js";
import type { StepKey, StepStore } from "../mirror/step-store.js";
import { StepError } from "./step-error.js";
import { stepResultJson } from "./step-result-json.js";

/**
 * Runs `fn` once per (event, handler, name) and returns its JSON result; a later attempt or a
 * replay of the event gets the stored result back without running `fn`.
 */
export type StepFunction = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** The step whose function is running in the current async context. */
export interface StepScope extends StepKey {
  /** An earlier run started this step and recorded no result: its effect may already exist upstream. */
  recovery: boolean;
  /** When the step was first started (the earliest its effect can have happened). */
  startedAt: Date;
  logger: Logger;
}

export interface DurableSteps {
  /** The `step` of one handler's context for one attempt (names are unique within it). */
  forHandler(target: { eventId: string; handlerKey: string; attempt: number; logger: Logger }): StepFunction;
  /** The step running in the caller's async context, if any (API writes read it to narrow a rerun). */
  current: () => StepScope | undefined;
}

const MAX_NAME_LENGTH = 200;

/** Durable steps over a step store; each factory has its own async context, so instances never mix. */
export function createDurableSteps(store: StepStore): DurableSteps {
  const scopes = new AsyncLocalStorage<StepScope>();

  function forHandler({ eventId, handlerKey, attempt, logger }: Parameters<DurableSteps["forHandler"]>[0]): StepFunction {
    const names = new Set<string>();
    return async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
      checkStep(name, fn, names);
      names.add(name);
      const key: StepKey = { eventId, handlerKey, name };
      const claim = await store.claim(key, attempt);
      if (claim.state === "done") return fromJson(claim.json) as T;
      const log = logger.child({ step: name });
      if (claim.recovery)
        log.warn("step runs again: an earlier run recorded no result; API writes inside it look for their own effect first");
      const started = performance.now();
      const failed = async (err: unknown) => {
        await store
          .fail(key, errorMessage(err), performance.now() - started)
          .catch((e: unknown) => log.warn({ err: errorMessage(e) }, "could not record the step's failure"));
        return err;
      };
      let json: string | undefined;
      try {
        const value = await scopes.run({ ...key, recovery: claim.recovery, startedAt: claim.startedAt, logger: log }, fn);
        json = stepResultJson(name, value);
      } catch (err) {
        throw await failed(err);
      }
      // The stored JSON, parsed: the first attempt sees exactly what every later one will.
      return fromJson(await store.complete(key, json, performance.now() - started)) as T;
    };
  }

  return { forHandler, current: () => scopes.getStore() };
}

function checkStep(name: unknown, fn: unknown, used: ReadonlySet<string>): void {
  if (typeof name !== "string" || name === "" || name.length > MAX_NAME_LENGTH)
    throw new StepError("invalid_step_name", `a step name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  if (used.has(name))
    throw new StepError(
      "duplicate_step",
      `step "${name}" ran twice in one attempt of this handler: give each step its own name (add an index in a loop)`,
    );
  if (typeof fn !== "function") throw new StepError("invalid_step_name", `step "${name}" needs a function to run`);
}

// undefined in, undefined out; the JSON text came from JSON.stringify or from jsonb.
const fromJson = (json: string | undefined): unknown => (json === undefined ? undefined : JSON.parse(json));

/** The `step` of a context not bound to a handler (never given to a handler by the worker). */
export const unboundStep: StepFunction = () =>
  Promise.reject(new StepError("step_unbound", "ctx.step is only available inside a handler run by the worker"));
