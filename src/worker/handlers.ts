import { HandlersModuleError } from "./errors.js";
import { AccountError } from "../mirror/errors.js";
import type { Logger } from "pino";
import {
  onChange as onChangeWith,
  type ChangeEvent,
  type ChangeField,
  type ChangeFilter,
  type ChangeKind,
  SENT_EVENT_TYPES,
  type AnyEvent,
} from "../events/catalog.js";
import {
  type EventFor,
  type HandledType,
  type Handler,
  type HandlerMap,
  createHandlerRegistry,
  type HandlerRegistry,
  type RegisteredHandler,
  perHandlerContext,
  traceHandlers,
} from "../events/dispatch.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import type { ApiClient } from "../upstream/client.js";
import { type StepFunction, createDurableSteps, stepAwareApi } from "./durable-steps.js";
import type { StepStore } from "../mirror/step-store.js";
import type { Tracing } from "../tracing/tracing.js";
import { apiAtCall, apiNotConfigured } from "./upstream.js";
import { createSyncHandlers, type RefreshQueue } from "../sync/refresh-queue.js";
import type { HandlerKeyRename } from "../mirror/event-log.js";
import { isAbsolute, resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import { changeListenersOf, type ListensToChange } from "../events/change-listeners.js";

/** What every handler receives beside the event. */
export interface HandlerContext {
  /**
   * The upstream client. On a service without one (API_BASE_URL/API_KEY not set) every call
   * fails the event for good with ApiNotConfiguredError, naming the call.
   */
  api: ApiClient;
  /** The company the event came for: `default` (POST /webhooks) or a registered account's id (docs/accounts.md). */
  account: string;
  /** The account's mirror (ctx.account's rows only). */
  mirror: MirrorStore;
  /**
   * A durable step: runs `fn` once per (event, handler, name) and stores its JSON result; a retry
   * or a replay of the event gets the stored result back without running `fn` (docs/handlers.md).
   *
   * @example
   * const booking = await ctx.step("create booking", () => ctx.api.createBooking(input));
   */
  step: StepFunction;
  /** A child logger bound to the event's id and type. */
  logger: Logger;
  /**
   * 1 on the event's first attempt, 2 on its first retry, …; a replay numbers on from the event's
   * attempts: the number its log lines and the console's attempt rows show.
   */
  attempt: number;
  /**
   * Aborted when the attempt's deadline (HANDLER_TIMEOUT_MS) passes: pass it to fetch and other
   * cancellable work. The attempt then counts as a retryable failure whether or not the handler
   * stops; its result, if it ever ends, is ignored.
   */
  signal: AbortSignal;
}

/** One handler of type `T` (a known type, a change type or '*'), with the service's context. */
export type EventHandler<T extends HandledType> = Handler<EventFor<T>, HandlerContext>;
/** The shape of a HANDLERS_MODULE's default export and of `createService({ handlers })`. */
export type EventHandlers = HandlerMap<HandlerContext>;

/**
 * The context an attempt makes for all its handlers, before each gets its own `step` and `api`;
 * with the registration of the account its event arrived under (`incarnation`), which each
 * handler's `api`, `mirror` and `step` are bound to.
 */
export type SharedHandlerContext = Omit<HandlerContext, "step" | "api" | "account"> & { incarnation?: string };

/**
 * A handler map entry that runs `handler` only for the changes of `kind` matching `filter`: the
 * field changed, from `from` (when given) to `to` (when given), made by one of `source` (when
 * given). `field` is one the kind's record has; `from` and `to` have that field's type.
 *
 * @example
 * const handlers: EventHandlers = {
 *   ...onChange("order", { field: "status", to: "READY", source: ["webhook", "reconcile"] }, async (event, { logger }) => {
 *     logger.info({ order: event.data.id, was: event.data.before?.status }, "order ready");
 *   }),
 * };
 */
export const onChange: <K extends ChangeKind, F extends ChangeField<K>>(
  kind: K,
  filter: ChangeFilter<K, F>,
  handler: Handler<ChangeEvent<K>, HandlerContext>,
) => Record<`change.${K}`, Handler<ChangeEvent<K>, HandlerContext>> = onChangeWith;

/** Account registrations whose handler parts are kept built, at most (then they are built again as asked). */
const MAX_BOUND_REGISTRATIONS = 10_000;

/** `store` with `check` asked before each of its calls (a check that throws refuses the call). */
function checkedAtCall<T extends object>(store: T, check: () => void): T {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        check();
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * The handlers the worker runs: the built-in sync handlers and the user's, each with a durable
 * `step` of its own and the API. Built whole again when `npm run dev` reloads a changed
 * HANDLERS_MODULE (`replace`).
 */
export function createHandlerTable(deps: {
  logger: Logger;
  mirror: MirrorStore;
  /** Durable steps' results (ctx.step). */
  steps: StepStore;
  api: ApiClient | undefined;
  /** A registered account's mirror and steps (storage.forAccount); without it every event uses the default's. */
  forAccount?: (account: string) => { mirror: MirrorStore; steps: StepStore };
  /** A registered account's API client (its key and budget), asked at each call: a key may be rotated meanwhile. */
  apiOf?: (account: string) => ApiClient;
  /**
   * Whether an event that arrived under the account's `incarnation` still belongs to it
   * (accounts.ts `belongsToAccount`): asked at each call of its handlers' `api`, `mirror` and
   * `step`, so a handler running as its account is removed, or added again for another company,
   * reads and writes nothing more under it. Without it: always.
   */
  belongs?: (account: string, incarnation?: string) => boolean;
  /** Where the built-in handlers note the records an event names, to be read again: the account's own queue. */
  refresh: (account: string) => Pick<RefreshQueue, "request">;
  handlers: readonly EventHandlers[];
  tracing?: Tracing;
}) {
  const { logger, mirror, api, tracing } = deps;
  // Each handler gets its own `step` (steps are keyed by handler) and, inside a step that runs
  // again after an unrecorded run, an API whose writes look for their own effect first.
  const partsFor = (mirror: MirrorStore, stepStore: StepStore, client: ApiClient | undefined) => {
    const steps = createDurableSteps(stepStore);
    return { mirror, steps, api: client ? stepAwareApi(client, { current: steps.current, mirror }) : apiNotConfigured() };
  };
  const own = partsFor(mirror, deps.steps, api);
  // A registered account's events get its own mirror, steps and API (its key and budget), per
  // registration of the account: each call first asks whether the event still belongs to it.
  const accounts = new Map<string, typeof own>();
  const partsOf = (account: string, incarnation: string | undefined): typeof own => {
    if (account === DEFAULT_ACCOUNT || !deps.forAccount) return own;
    const registration = `${account}#${incarnation ?? ""}`;
    let parts = accounts.get(registration);
    if (!parts) {
      const stores = deps.forAccount(account);
      const { apiOf, belongs } = deps;
      const check = () => {
        if (belongs && !belongs(account, incarnation))
          throw new AccountError("account_not_found", `account ${account} was removed, or added again, since this event arrived`);
      };
      const client = api && apiOf ? apiAtCall(() => (check(), apiOf(account))) : undefined;
      parts = partsFor(checkedAtCall(stores.mirror, check), checkedAtCall(stores.steps, check), client);
      // One entry per account and registration: a registration removed leaves its entry to the next clear.
      if (accounts.size >= MAX_BOUND_REGISTRATIONS) accounts.clear();
      accounts.set(registration, parts);
    }
    return parts;
  };
  const withSteps = ({ incarnation, ...ctx }: SharedHandlerContext, handlerKey: string, event: AnyEvent): HandlerContext => {
    const account = event.account ?? DEFAULT_ACCOUNT;
    const parts = partsOf(account, incarnation);
    return {
      ...ctx,
      account,
      mirror: parts.mirror,
      api: parts.api,
      step: parts.steps.forHandler({ eventId: event.id, handlerKey, attempt: ctx.attempt, logger: ctx.logger }),
    };
  };
  // Who receives a change, from the maps the registry is built from (rebuilt with it on a reload).
  let listening: ListensToChange = () => false;
  const table = createReloadableRegistry((handlers) => {
    const built = createHandlerRegistry<HandlerContext>();
    const traced = tracing ? traceHandlers<HandlerContext>(tracing.tracer) : undefined;
    const use = (map: EventHandlers, source: string) => built.use(map, source, traced);
    const sync = createSyncHandlers(deps.refresh, { withApi: api !== undefined });
    use(sync, "sync");
    handlers.forEach((map, i) => {
      const source = handlers.length > 1 ? `user${i}` : "user";
      logRegisteredHandlers(logger, source, use(map, source));
    });
    listening = changeListenersOf([sync, ...handlers]);
    return built;
  }, deps.handlers);
  return {
    ...table,
    // The registry as the attempt runner dispatches through it: each handler gets its own `step` and `api`.
    dispatch: perHandlerContext(table.registry, withSteps),
    /**
     * Whether a handler of this table receives a change of `type` made by `source`: what the
     * mirror's writers ask before a change becomes an event (events/change-listeners.ts).
     */
    listensToChange: ((type, source) => listening(type, source)) as ListensToChange,
  };
}

/** The worker's handler table, rebuilt whole when `npm run dev` reloads a changed HANDLERS_MODULE. */
function createReloadableRegistry<Ctx>(
  build: (handlers: readonly EventHandlers[]) => HandlerRegistry<Ctx>,
  initial: readonly EventHandlers[],
) {
  let current = build(initial);
  /** Dispatch reads through this one: it always asks the registry built last. */
  const registry: HandlerRegistry<Ctx> = {
    on: (type: string, handlers: never, source?: string) => current.on(type, handlers, source),
    onAny: (handlers, source) => current.onAny(handlers, source),
    use: (map, source, wrap) => current.use(map, source, wrap),
    handlersFor: (type) => current.handlersFor(type),
    registered: () => current.registered(),
  };
  return {
    registry,
    /**
     * Builds a registry from `handlers` and swaps it in: events dispatched from then on run the new
     * handlers; attempts already running finish with the old ones. A build that throws swaps nothing.
     */
    replace(handlers: readonly EventHandlers[]): RegisteredHandler<Ctx>[] {
      current = build(handlers);
      return current.registered();
    },
  };
}

type About = Pick<RegisteredHandler<unknown>, "key" | "source" | "type" | "name">;

const KNOWN_TYPES: readonly string[] = [...SENT_EVENT_TYPES, "*"];

/**
 * Logs what one source (a HANDLERS_MODULE, a map given to createService) registered: its types
 * and handler names and keys, and a warning naming each type the upstream and the mirror never
 * send (a typo such as `order.craeted` would otherwise never run, silently).
 */
export function logRegisteredHandlers(logger: Logger, source: string, added: readonly About[]): void {
  const unknown = [...new Set(added.map((h) => h.type))].filter((t) => !KNOWN_TYPES.includes(t));
  if (unknown.length > 0)
    logger.warn(
      { source, unknown, known: KNOWN_TYPES },
      `handlers from ${source} for event types nobody sends today: ${unknown.join(", ")} (they run only if such an event arrives)`,
    );
  logger.info({ source, handlers: added.map(({ type, name, key }) => ({ type, name, key })) }, "handlers registered");
}

/**
 * The renames from positional keys (`<source>:<type>:0`, the first handler of a type from one
 * source, the only one a handler map could hold) to named ones, where the handler is certain: a
 * type with one handler from that source. A type that now has several is left alone (which of
 * them was the first is not known); its old steps are left to retention.
 */
export function positionalRenames(handlers: readonly About[]): HandlerKeyRename[] {
  const bySourceType = new Map<string, About[]>();
  for (const h of handlers) {
    const group = `${h.source}:${h.type}`;
    bySourceType.set(group, [...(bySourceType.get(group) ?? []), h]);
  }
  return [...bySourceType].flatMap(([group, [only, ...others]]) =>
    only && others.length === 0 ? [{ from: `${group}:0`, to: only.key }] : [],
  );
}

/**
 * Moves step records from positional keys to the handlers' named keys, once (the worker's
 * start-up, before any handler runs: only then is the module, and so each handler's name, known).
 * A rename that found no step records is not logged: a line per handler with `steps: 0` at every
 * first start said nothing.
 */
export async function adoptNamedHandlerKeys(handlers: readonly About[], steps: Pick<StepStore, "renameHandlerKeys">, logger: Logger) {
  for (const rename of await steps.renameHandlerKeys(positionalRenames(handlers)))
    if (rename.steps > 0) logger.info(rename, "step records moved from a handler's position to its name");
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
  const file = isAbsolute(path) ? path : resolve(cwd, path);
  const url = pathToFileURL(file).href + (version === undefined ? "" : `?v=${version}`);
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (err) {
    // Asked on any failure, not only a SyntaxError: a loader (tsx, vitest) may wrap the parser's error.
    const where = syntaxErrorAt(file);
    if (where) throw new HandlersModuleError(`HANDLERS_MODULE ${path}: ${where}`, { cause: err });
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

/**
 * Where a JavaScript file's syntax error is, as `SyntaxError at line 3, column 7: Unexpected token
 * '}'`; undefined when the file itself parses (the error is in a file it imports, a link error such
 * as a missing export, or a throw at its top level), is missing, or is not plain JavaScript. The SyntaxError of an ES module's
 * import carries no position, so this asks `node --check`, which prints `file:line`, the line and a
 * caret under the column: one child process, only on this failure path. A TypeScript file is not
 * checked: Node's own parser would call its type annotations errors.
 */
function syntaxErrorAt(file: string): string | undefined {
  if (!/\.[cm]?js$/.test(file)) return undefined;
  try {
    execFileSync(process.execPath, ["--check", file], { stdio: "pipe", timeout: 10_000 });
    return undefined;
  } catch (err) {
    const lines = ((err as { stderr?: Buffer }).stderr?.toString() ?? "").split("\n");
    const line = /:(\d+)$/.exec(lines[0] ?? "")?.[1];
    const message = lines.map((l) => /^SyntaxError: (.+)$/.exec(l)?.[1]).find((m) => m !== undefined);
    if (!line || !message) return undefined;
    const caret = (lines[2] ?? "").indexOf("^");
    return `SyntaxError at line ${line}${caret >= 0 ? `, column ${caret + 1}` : ""}: ${message}`;
  }
}
