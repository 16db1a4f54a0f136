import { afterEach, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClientOptions } from "../../src/upstream/client.js";
import { isPermanentUpstreamError, UpstreamPageRefusedError, UpstreamServerError } from "../../src/upstream/errors.js";
import { MAX_ERROR_BODY_BYTES } from "../../src/upstream/client.js";

// Issue 32 item 1: what one answer of a broken upstream may cost the client, over real HTTP.
let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

async function clientOf(options: Partial<ApiClientOptions> = {}) {
  sandbox = createSandbox({ restaurants: 1 });
  const baseUrl = await sandbox.listen();
  return createApiClient({ baseUrl, apiKey: sandbox.apiKey, retryBaseMs: 10, ...options });
}

describe("the client's bounds on what it reads", () => {
  it("refuses a page over its byte cap once, without reading the rest (a 256 MB body never arrives whole)", async () => {
    const api = await clientOf({ maxPageBytes: 64 * 1024 });
    sandbox!.faults.add({ path: "/api/v1/orders", padBodyBytes: 256 * 1024 * 1024 });
    const error = await api.listOrders({ limit: 100 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamPageRefusedError);
    expect(error).toMatchObject({ code: "page_too_large", message: expect.stringContaining("over 65536 bytes") as unknown });
    // Refused for good: not sent again, and a queue consumer does not retry it either.
    expect(sandbox!.requestLog).toHaveLength(1);
    expect(isPermanentUpstreamError(error)).toBe(true);
  });

  it("reads a page under the cap as before, whitespace after its JSON and all", async () => {
    const api = await clientOf({ maxPageBytes: 64 * 1024 });
    sandbox!.faults.add({ path: "/api/v1/orders", padBodyBytes: 60 * 1024 });
    const page = await api.listOrders({ limit: 5 });
    expect(page.data).toHaveLength(5);
  });

  it("refuses a page with more records than the limit asked for, naming both numbers", async () => {
    const api = await clientOf();
    sandbox!.faults.add({ path: "/api/v1/orders", pageRecords: 150 });
    const error = await api.listOrders({ limit: 100 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamPageRefusedError);
    expect(error).toMatchObject({ code: "page_over_limit", message: expect.stringContaining("150 records for limit 100") as unknown });
    expect(sandbox!.requestLog).toHaveLength(1);
  });

  it("reads at most a few KB of an error answer: a 500 with a 5 MB message keeps its code and says where its message was cut", async () => {
    const api = await clientOf({ readRetries: 1 });
    sandbox!.faults.add({ path: "/api/v1/orders", status: 500, padBodyBytes: 5_000_000 });
    const error = await api.listOrders({ limit: 10 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamServerError);
    const { message, code } = error as UpstreamServerError;
    expect(code).toBe("internal");
    expect(message).toMatch(/^GET \/api\/v1\/orders answered 500: injected fault 500 x+… \(cut at 4096 bytes\)$/);
    expect(message.length).toBeLessThan(MAX_ERROR_BODY_BYTES + 100);
    // A 5xx is still worth one more try: the cut changes what is kept, not whether it retries.
    expect(sandbox!.requestLog).toHaveLength(2);
  });
});
