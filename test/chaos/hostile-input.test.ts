import { randomUUID } from "node:crypto";
import { request } from "node:http";
import fc from "fast-check";
import { afterAll, describe, expect, inject, it } from "vitest";
import { parseEnvelope } from "../../src/events/envelope.js";
import { signPayload } from "../../src/events/envelope.js";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { inspectQueues } from "../helpers/inspect-queues.js";
import { rssMiB } from "../helpers/rss.js";

const SECRET = "whsec_chaos_fuzz_51e0aa";
const MAX = 16 * 1024;
let proc: CliProcess | undefined;
afterAll(() => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
});

interface Shot {
  body: Uint8Array;
  headers: Record<string, string | string[]>;
  /** Send the body in two parts with a pause between, without Content-Length. */
  slow: boolean;
  /** Declare more bytes than are sent, then hang up. */
  truncated: boolean;
  signedValid: boolean;
  /** A signed, complete, well-formed event within the cap: it must be accepted. */
  mustAccept: boolean;
}

let slowestShotMs = 0;

function shoot(port: number, shot: Shot): Promise<number | "reset"> {
  return new Promise((done) => {
    const started = Date.now();
    let settled = false;
    // "end", "error" and "close" may all fire: the first one counts.
    const resolve = (v: number | "reset") => {
      if (settled) return;
      settled = true;
      slowestShotMs = Math.max(slowestShotMs, Date.now() - started);
      done(v);
    };
    const headers: Record<string, string | string[] | number> = { ...shot.headers };
    if (!shot.slow) headers["content-length"] = shot.truncated ? shot.body.length + 100 : shot.body.length;
    const req = request({ host: "127.0.0.1", port, method: "POST", path: "/webhooks", headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", () => resolve("reset"));
    });
    req.on("error", () => resolve("reset"));
    // A destroyed request may close without an error event.
    req.on("close", () => setImmediate(() => resolve("reset")));
    req.setTimeout(5000, () => req.destroy());
    if (shot.truncated) {
      // Hung up once what it does send is on its way.
      req.write(shot.body, () => req.destroy());
    } else if (shot.slow) {
      const half = Math.floor(shot.body.length / 2);
      req.write(shot.body.subarray(0, half));
      setTimeout(() => req.end(shot.body.subarray(half)), 30);
    } else req.end(shot.body);
  });
}

/** The event id when the edge's own parser takes `body` (unit-tested in envelope.test.ts). */
function eventId(body: Uint8Array): string | undefined {
  try {
    return parseEnvelope(body).id;
  } catch {
    return undefined;
  }
}

const validEvent = fc
  .record({ type: fc.constantFrom("order.created", "review.created", "x.y"), n: fc.nat() })
  .map(({ type, n }) =>
    Buffer.from(JSON.stringify({ id: `evt_fuzz_${n}_${randomUUID()}`, type, data: { id: `o${n}`, restaurantId: "r" } })),
  );
const bodies = fc.oneof(
  fc.uint8Array({ maxLength: 2048 }),
  validEvent,
  validEvent.map((b) => b.subarray(0, Math.max(1, b.length - 7))),
  fc.constantFrom(Buffer.from("[]"), Buffer.from("null"), Buffer.from('{"type":1}'), Buffer.from("{}"), Buffer.alloc(0)),
  fc.nat({ max: 3 }).map((k) => Buffer.alloc(MAX + 1 + k * 10_000, 0x61)),
);
// Mostly JSON, so most shots get past the 415 and reach the signature and the parser.
const contentTypes = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 5 },
  fc.constantFrom("text/plain", "application/xml", "multipart/form-data; boundary=x", "", "application/json; charset=latin1"),
);
const shots = fc
  .record({
    body: bodies,
    signature: fc.constantFrom("valid", "missing", "garbage", "wrong-secret", "other-body", "uppercase-prefix", "twice", "long"),
    contentType: contentTypes,
    slow: fc.boolean(),
    truncated: fc.boolean(),
  })
  .map(({ body, signature, contentType, slow, truncated }): Shot => {
    const sig =
      signature === "valid"
        ? signPayload(body, SECRET)
        : signature === "garbage"
          ? "sha256=not hex at all"
          : signature === "wrong-secret"
            ? signPayload(body, "whsec_other")
            : signature === "other-body"
              ? signPayload(Buffer.concat([body, Buffer.from(" ")]), SECRET)
              : signature === "uppercase-prefix"
                ? signPayload(body, SECRET).replace("sha256=", "SHA256=")
                : signature === "long"
                  ? "sha256=" + "a".repeat(6000)
                  : // Two header lines, one valid: Node joins them into one value, which is refused.
                    signature === "twice"
                    ? [signPayload(body, SECRET), "sha256=00"]
                    : undefined;
    const headers: Record<string, string | string[]> = {};
    if (contentType) headers["content-type"] = contentType;
    if (sig) headers["x-svc-signature"] = sig;
    const signedValid = signature === "valid" || signature === "uppercase-prefix";
    const isTruncated = truncated && body.length > 0;
    return {
      body,
      headers,
      slow: slow && !isTruncated,
      truncated: isTruncated,
      signedValid,
      // Only a body that says it is JSON is read (415 otherwise, docs/edge.md).
      mustAccept: signedValid && contentType === "application/json" && !isTruncated && body.length <= MAX && eventId(body) !== undefined,
    };
  });

describe("hostile input", () => {
  it("never answers 5xx (but 503), never crashes, never enqueues an unsigned event, keeps memory flat", async () => {
    const prefix = `chaos-fuzz-${randomUUID().slice(0, 6)}`;
    proc = runCli(["serve", "--role", "web"], {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix,
      SIGNING_SECRET: SECRET,
      PORT: "0",
      MAX_BODY_BYTES: String(MAX),
    });
    const url = await proc.listening();
    const port = Number(new URL(url).port);
    const pid = proc.child.pid!;

    const statuses = new Map<string, number>();
    const acceptedIds = new Set<string>();
    let requests = 0;
    const run = (numRuns: number) =>
      fc.assert(
        fc.asyncProperty(shots, async (shot) => {
          const status = await shoot(port, shot);
          requests++;
          statuses.set(String(status), (statuses.get(String(status)) ?? 0) + 1);
          if (status !== "reset") expect(status < 500 || status === 503, `status ${status}`).toBe(true);
          if (shot.mustAccept) expect(status).toBe(200);
          if (status === 200) {
            expect(shot.signedValid).toBe(true);
            acceptedIds.add(eventId(shot.body)!);
          }
        }),
        { numRuns, seed: 20261122 },
      );
    await run(200); // warm-up, so the baseline includes JIT-compiled code
    const before = rssMiB(pid);
    await run(1500);
    const after = rssMiB(pid);

    expect(proc.child.exitCode).toBeNull();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const inspected = inspectQueues(inject("redisUrl"), prefix, [EVENTS_QUEUE]);
    try {
      const enqueued = await inspected.eventIds(["waiting", "active", "completed", "delayed", "failed", "prioritized"]);
      expect([...enqueued].filter((id) => !acceptedIds.has(id))).toEqual([]);
      expect(enqueued.size).toBe(acceptedIds.size);
    } finally {
      await inspected.close();
    }
    console.log(
      `CHAOS hostile-input ${JSON.stringify({ requests, slowestShotMs, statuses: Object.fromEntries(statuses), accepted: acceptedIds.size, rssBeforeMiB: before.toFixed(1), rssAfterMiB: after.toFixed(1) })}`,
    );
    expect(after).toBeLessThan(before * 1.5);
  });
});
