import { describe, expect, it } from "vitest";
import { createHandlerRegistry, type HandlerMap } from "../../src/events/dispatch.js";
import { createLogger } from "../../src/logging/logger.js";
import { adoptNamedHandlerKeys, logRegisteredHandlers, positionalRenames } from "../../src/worker/handlers.js";
import { captureLogs } from "../helpers/log-capture.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

const noop = () => undefined;
function notify() {
  return undefined;
}

describe("handler names and keys", () => {
  it("keys a handler by its name: the type for one written inline, the function's name, or the name given", () => {
    const registry = createHandlerRegistry<object>();
    const map: HandlerMap<object> = moduleHandlers({
      "order.created": [notify, { name: "audit", handle: noop }],
      "order.updated": () => undefined,
      "*": { name: "metrics", handle: noop },
    });
    registry.use(map, "user");
    expect(registry.handlersFor("order.created").map((h) => h.key)).toEqual([
      "user:order.created:notify",
      "user:order.created:audit",
      "user:*:metrics",
    ]);
    expect(registry.handlersFor("order.updated").map((h) => h.key)).toEqual(["user:order.updated", "user:*:metrics"]);
  });

  it("refuses at registration a key the event log could not keep or find (an id: at most 200 characters)", () => {
    const registry = createHandlerRegistry<object>();
    const longType = `order.${"x".repeat(150)}`;
    expect(() => registry.on(longType, { name: "n".repeat(60), handle: noop })).toThrow(
      /^the handler key "app:order\.x+…" .* must be at most 200 characters/,
    );
    expect(registry.registered()).toEqual([]);
    // Spaces and any letters are a name's to hold: such a key is an id like any other.
    registry.on("order.created", { name: "notify kitchen ünd bar", handle: noop });
    expect(registry.registered().map((h) => h.key)).toEqual(["app:order.created:notify kitchen ünd bar"]);
  });

  it("gives each handler the same key whatever the order of the module", () => {
    const first = () => undefined;
    const second = () => undefined;
    const keysOf = (map: HandlerMap<object>) => {
      const registry = createHandlerRegistry<object>();
      registry.use(map, "user");
      return new Map(registry.handlersFor("order.created").map((h) => [h.handler, h.key]));
    };
    const before = keysOf({
      "order.created": [
        { name: "book", handle: first },
        { name: "notify", handle: second },
      ],
    });
    const after = keysOf({
      "order.created": [
        { name: "notify", handle: second },
        { name: "book", handle: first },
      ],
    });
    expect(after).toEqual(before);
    expect(before.get(first)).toBe("user:order.created:book");
  });

  it.each([
    [
      "two nameless functions",
      [() => undefined, () => undefined],
      /two handlers for "order.created" from user are named "order.created": give each its own name/,
    ],
    ["two handlers under one name", [notify, { name: "notify", handle: noop }], /are named "notify"/],
    ["a name that reads as a position", [{ name: "0", handle: noop }], /the handler #0 for "order.created" from user has the name "0"/],
    ["an empty name", [{ name: "", handle: noop }], /1 to 64 characters/],
    ["a name over 64 characters", { name: "n".repeat(65), handle: noop }, /1 to 64 characters/],
    ["an entry that is no handler", [{ handle: "nope" }], /#0 for "order.created" from user must be a function or \{ name, handle \}/],
  ])("refuses %s, saying which handler and what to do", (_what, handlers, message) => {
    const registry = createHandlerRegistry<object>();
    expect(() => registry.use({ "order.created": handlers as never }, "user")).toThrow(message);
  });

  it("wraps each handler after naming it, so a wrapper (tracing) does not change keys", () => {
    const registry = createHandlerRegistry<object>();
    const seen: string[] = [];
    registry.use({ "order.created": notify }, "user", (handler, { key }) => {
      seen.push(key);
      return () => handler(undefined as never, {});
    });
    expect(seen).toEqual(["user:order.created:notify"]);
    expect(registry.handlersFor("order.created")[0]!.handler).not.toBe(notify);
  });
});

describe("positional keys to names", () => {
  it("renames <source>:<type>:0 where a source has one handler for the type, and leaves a type with several alone", () => {
    const registry = createHandlerRegistry<object>();
    registry.use({ "order.created": notify, "*": () => undefined }, "user");
    registry.use(
      {
        "order.created": [
          { name: "a", handle: noop },
          { name: "b", handle: noop },
        ],
      },
      "user1",
    );
    registry.use(
      {
        "order.created": function order() {
          return undefined;
        },
      },
      "sync",
    );
    expect(positionalRenames(registry.registered())).toEqual([
      { from: "user:order.created:0", to: "user:order.created:notify" },
      { from: "user:*:0", to: "user:*" },
      { from: "sync:order.created:0", to: "sync:order.created:order" },
    ]);
  });
});

describe("what a module registered", () => {
  it("logs its types, names and keys, and warns of a type nobody sends, listing the known ones", () => {
    const logs = captureLogs();
    const registry = createHandlerRegistry<object>();
    const added = registry.use(moduleHandlers({ "order.craeted": notify, "change.order": () => undefined, "*": () => undefined }), "user");
    logRegisteredHandlers(createLogger({ destination: logs.stream, level: "info" }), "user", added);
    const [warning, info] = logs.records();
    expect(warning).toMatchObject({ level: 40, source: "user", unknown: ["order.craeted"] });
    expect(warning!.known).toEqual(expect.arrayContaining(["order.created", "change.order", "*"]));
    expect(warning!.msg).toContain("order.craeted");
    expect(info).toMatchObject({
      msg: "handlers registered",
      handlers: [
        { type: "order.craeted", name: "notify", key: "user:order.craeted:notify" },
        { type: "change.order", name: "change.order", key: "user:change.order" },
        { type: "*", name: "*", key: "user:*" },
      ],
    });
  });
});

describe("step records moved to handlers' names", () => {
  it("logs a rename that moved step records, and none that moved nothing", async () => {
    const logs = captureLogs();
    const applied = [
      { from: "user:order.created:0", to: "user:order.created:notify", steps: 0 },
      { from: "user:guest.arrived:0", to: "user:guest.arrived:greet", steps: 3 },
    ];
    await adoptNamedHandlerKeys(
      [],
      { renameHandlerKeys: () => Promise.resolve(applied) },
      createLogger({ destination: logs.stream, level: "info" }),
    );
    expect(logs.records()).toEqual([
      expect.objectContaining({ msg: "step records moved from a handler's position to its name", from: "user:guest.arrived:0", steps: 3 }),
    ]);
  });
});
