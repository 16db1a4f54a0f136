import { readFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { ChangeEvent } from "../../src/events/catalog.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { importAll } from "../helpers/import-all.js";
import { startStack, type Stack } from "../helpers/stack.js";

// docs/architecture.md "One delivery, file by file", held to the code as walked: the files of src/
// (the sandbox's aside) with a function that ran during one delivery, by V8's precise coverage,
// are the files that section names. Two deliveries are measured and only the files both ran
// count: a timer of the stack (a minute's sample, a scheduler tick) that fires in one window
// cannot fire in both, seconds apart.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The `src/…` files the section names, and how many it says run code. */
function documentedPath(): { files: Set<string>; said: number } {
  const doc = readFileSync(`${ROOT}/docs/architecture.md`, "utf8");
  const section = doc.slice(doc.indexOf("## One delivery, file by file"), doc.indexOf("## The first attempt and the retries"));
  const files = new Set([...section.matchAll(/`(src\/[\w/.-]+\.tsx?)`/g)].map((m) => m[1]!));
  return { files, said: Number(/\*\*(\d+) files run code\*\*/.exec(section)?.[1]) };
}

interface Coverage {
  result: { url: string; functions: { functionName: string; ranges: { startOffset: number; count: number }[] }[] }[];
}

/** Calls so far of each function of src/ (file, name and offset). */
async function calls(session: Session): Promise<Map<string, number>> {
  const { result } = (await session.post("Profiler.takePreciseCoverage")) as Coverage;
  const by = new Map<string, number>();
  for (const script of result) {
    if (!script.url.includes("/src/")) continue;
    const file = relative(ROOT, script.url.startsWith("file:") ? fileURLToPath(script.url) : script.url);
    if (!file.startsWith("src/") || file.startsWith("src/sandbox/")) continue;
    for (const f of script.functions) by.set(`${file}#${f.ranges[0]?.startOffset}`, f.ranges[0]?.count ?? 0);
  }
  return by;
}

/** The files with a function whose calls grew from `before` to `after`. */
function ranIn(before: Map<string, number>, after: Map<string, number>): Set<string> {
  const files = new Set<string>();
  for (const [key, n] of after) if (n > (before.get(key) ?? 0)) files.add(key.slice(0, key.indexOf("#")));
  return files;
}

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

describe("one delivery's path (docs/architecture.md)", () => {
  it("runs code in exactly the files the section names", async () => {
    const changes: ChangeEvent[] = [];
    const handlers: EventHandlers = { "change.order": (e: ChangeEvent) => void changes.push(e) };
    stack = await startStack({ handlers: [handlers], apiRate: 1200 });
    const s = stack;
    await importAll({ api: s.svc.service.worker!.api!, mirror: s.svc.service.mirror, db: s.svc.database.db });
    const pending = s.sandbox.state.orders().filter((o) => o.status === "PENDING");
    // An order's status move: the webhook, the refresh it asks for, the change event a handler receives.
    const deliver = async (n: number) => {
      s.sandbox.actions.updateOrderStatus(pending[n]!.id, "CONFIRMED");
      await s.settled();
      expect(changes).toHaveLength(n + 1);
    };
    await deliver(0); // first sight: what runs once per process is not the path
    const session = new Session();
    session.connect();
    try {
      await session.post("Profiler.enable");
      await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
      const windows: Set<string>[] = [];
      for (const n of [1, 2]) {
        const before = await calls(session);
        await deliver(n);
        windows.push(ranIn(before, await calls(session)));
      }
      const [a, b] = windows as [Set<string>, Set<string>];
      const path = [...a].filter((f) => b.has(f)).sort();
      expect(path.length).toBeGreaterThan(20);
      const documented = documentedPath();
      expect(path).toEqual([...documented.files].sort());
      expect(documented.said).toBe(path.length);
    } finally {
      session.disconnect();
    }
  });
});
