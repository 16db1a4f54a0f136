import { afterEach, describe, expect, it } from "vitest";
import { openRawSocket, trickle } from "../helpers/raw-socket.js";
import { sampleEvent, startEdge, type TestEdge } from "../helpers/edge.js";
import { waitFor } from "../helpers/wait-for.js";

// Each test starts its own edge with the limits it exercises.
let edge: TestEdge | undefined;
afterEach(async () => {
  await edge?.stop();
  edge = undefined;
});

const requestLines = (e: TestEdge) => e.logs.records().filter((r) => r.msg === "request");

describe("the edge against long URLs", () => {
  it("writes a bounded log line per request however long the URL (a flood cannot grow the log)", async () => {
    edge = await startEdge();
    const rssBefore = process.memoryUsage().rss;
    const longPath = `/${"a".repeat(7000)}`;
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${edge!.url}${longPath}`)));
      for (const res of answers) {
        expect(res.status).toBe(404);
        await res.arrayBuffer();
      }
    }
    const lines = requestLines(edge).filter((r) => r.status === 404);
    expect(lines).toHaveLength(200);
    const longest = Math.max(...edge.logs.lines.filter((l) => l.includes('"request"')).map((l) => Buffer.byteLength(l)));
    // The 404 answer itself echoes no path either.
    expect(longest).toBeLessThan(1024);
    expect(String(lines[0]!.path)).toMatch(/^\/a{255}…\[\+\d+ chars\]$/);
    console.info(
      `LIMITS rss before/after 200 × 7 KB URLs: ${(rssBefore / 2 ** 20).toFixed(0)} / ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, longest log line ${longest} B`,
    );
  });

  it("answers 431 to request headers over 8 KB", async () => {
    edge = await startEdge();
    const res = await fetch(`${edge.url}/${"b".repeat(12 * 1024)}`);
    expect(res.status).toBe(431);
  });
});

// A header of the right shape: the edge reads a body only after checking it (the digest itself is
// checked once the body is in, which these requests never reach).
const WELL_FORMED_SIGNATURE = `X-SVC-Signature: sha256=${"0".repeat(64)}\r\n`;

describe("the edge against slow clients", () => {
  const SHORT = { HTTP_REQUEST_TIMEOUT_MS: "1000", HTTP_HEADERS_TIMEOUT_MS: "500" };

  it("cuts off a body that arrives a byte at a time once the request timeout passes", { timeout: 10_000 }, async () => {
    edge = await startEdge(SHORT);
    const raw = await openRawSocket(edge.url);
    raw.socket.write(
      `POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${WELL_FORMED_SIGNATURE}Content-Length: 4000\r\n\r\n{`,
    );
    trickle(raw.socket, "x".repeat(4000), 50);
    const received = await raw.closed;
    expect(received === "" || received.startsWith("HTTP/1.1 408")).toBe(true);
    expect(await edge.queue.count()).toBe(0);
  });

  it("cuts off headers that arrive a byte at a time, but keeps an idle keep-alive connection", { timeout: 10_000 }, async () => {
    edge = await startEdge(SHORT);
    const idle = await openRawSocket(edge.url);
    idle.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    await idle.until(/"status":"ok"/);
    // Opened after `idle` went quiet: once its header deadline has passed, so has `idle`'s.
    const slow = await openRawSocket(edge.url);
    slow.socket.write("GET /healthz HTTP/1.1\r\n");
    trickle(slow.socket, "X-Slow: " + "y".repeat(400), 50);
    const cut = await slow.closed;
    expect(cut === "" || cut.startsWith("HTTP/1.1 408")).toBe(true);
    idle.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect((await idle.closed).match(/HTTP\/1.1 200/g)).toHaveLength(2);
  });

  it("refuses connections beyond HTTP_MAX_CONNECTIONS", async () => {
    edge = await startEdge({ HTTP_MAX_CONNECTIONS: "2" });
    const held = [await openRawSocket(edge.url), await openRawSocket(edge.url)];
    for (const s of held) {
      s.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      await s.until(/"status":"ok"/);
    }
    const extra = await openRawSocket(edge.url);
    extra.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(await extra.closed).toBe("");
    for (const s of held) s.socket.destroy();
  });

  it("answers 503 with Retry-After while bodies that arrived hold the whole budget, and recovers", async () => {
    edge = await startEdge({ MAX_BODY_BYTES: "2048", MAX_BUFFERED_BODY_BYTES: "2048" });
    const hog = await openRawSocket(edge.url);
    hog.socket.write(
      `POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${WELL_FORMED_SIGNATURE}Content-Length: 2000\r\n\r\n{"pad":"${"x".repeat(1900)}`,
    );
    const body = JSON.stringify(sampleEvent());
    const refused = await waitFor(
      async () => {
        const res = await edge!.postSigned(body);
        return res.status === 503 ? res : (await res.arrayBuffer(), false);
      },
      { what: "a 503 while the budget is held" },
    );
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("server_busy");
    hog.socket.destroy();
    await waitFor(async () => (await edge!.postSigned(body)).status === 200, { what: "the budget released" });
  });
});

describe("an aborted upload", () => {
  it("is a client error logged at debug, never an error-level line", async () => {
    edge = await startEdge();
    const raw = await openRawSocket(edge.url);
    raw.socket.write(
      `POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${WELL_FORMED_SIGNATURE}Content-Length: 1000\r\n\r\n` +
        "x".repeat(100),
    );
    // end() sends the half body, then FIN: the server sees the request, then the client go away.
    raw.socket.end();
    await waitFor(() => edge!.logs.records().some((r) => r.path === "/webhooks"), { what: "the request log line" });
    const records = edge.logs.records();
    // The start-up line that the operator surface is off (this edge has no ADMIN_TOKEN) is not about the upload.
    const aboutRequests = records.filter((r) => !String(r.msg).startsWith("ADMIN_TOKEN is not set"));
    expect(aboutRequests.filter((r) => Number(r.level) >= 40)).toEqual([]);
    expect(records.find((r) => r.path === "/webhooks")).toMatchObject({ level: 20, status: 400 });
  });
});
