import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { verifySignature } from "../../src/events/envelope.js";
import { createSandboxCompanies, type SandboxCompanies } from "../../src/sandbox/companies.js";
import { createSandbox, type Sandbox, type SandboxOptions } from "../../src/sandbox/index.js";

// Everything opened in a test, closed after it (a test that failed early leaves what it opened).
let opened: { close(): Promise<void> }[] = [];
let receivers: Server[] = [];
afterEach(async () => {
  await Promise.all(opened.map((s) => s.close()));
  opened = [];
  for (const r of receivers) r.close();
  receivers = [];
});

async function start(companies: SandboxOptions[] = [{}, {}]): Promise<SandboxCompanies & { url: string }> {
  const whole = createSandboxCompanies(companies);
  opened.push(whole);
  await whole.listen();
  return whole as SandboxCompanies & { url: string };
}

const company = (whole: SandboxCompanies, index: number): Sandbox => whole.companies[index]!;
const call = (url: string, path: string, key: string | undefined, init: RequestInit = {}) =>
  fetch(`${url}${path}`, {
    ...init,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), "content-type": "application/json" },
  });
interface Page {
  data: { id: string; restaurantId: string; name?: string }[];
  error?: { code: string; message: string };
}
const json = async (res: Response) => (await res.json()) as Page;

/** A local webhook endpoint that records each delivery's body and signature. */
async function startReceiver() {
  const got: { body: string; signature: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      got.push({ body, signature: String(req.headers["x-svc-signature"]) });
      res.end();
    });
  });
  receivers.push(receiver);
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, got };
}

describe("one sandbox, several companies", () => {
  it("lists to each key only its own company's orders", async () => {
    const whole = await start();
    const [a, b] = [company(whole, 0), company(whole, 1)];
    const listed = async (key: string) => (await json(await call(whole.url, "/api/v1/orders?limit=100", key))).data.map((o) => o.id);
    const [ofA, ofB] = [await listed(a.apiKey), await listed(b.apiKey)];
    expect(ofA.sort()).toEqual(
      a.state
        .orders()
        .map((o) => o.id)
        .sort(),
    );
    expect(ofB.sort()).toEqual(
      b.state
        .orders()
        .map((o) => o.id)
        .sort(),
    );
    expect(ofA.filter((id) => ofB.includes(id))).toEqual([]);
    // Each company's request log holds its own key's requests only.
    expect(a.requestLog).toHaveLength(1);
    expect(b.requestLog).toHaveLength(1);
  });

  it("holds the same restaurant id in both companies, each with its own data", async () => {
    const whole = await start();
    const [a, b] = [company(whole, 0), company(whole, 1)];
    const menu = async (key: string) => (await json(await call(whole.url, "/api/v1/menu-items?restaurantId=rest_1", key))).data;
    const [ofA, ofB] = [await menu(a.apiKey), await menu(b.apiKey)];
    expect(ofA.length).toBeGreaterThan(0);
    expect(ofB.length).toBeGreaterThan(0);
    for (const item of [...ofA, ...ofB]) expect(item.restaurantId).toBe("rest_1");
    expect(ofA.map((i) => i.id).filter((id) => ofB.some((j) => j.id === id))).toEqual([]);
    expect(a.state.restaurants().map((r) => r.id)).toEqual(b.state.restaurants().map((r) => r.id));
  });

  it("answers another company's order id as an unknown id, and an unknown key as today's 401", async () => {
    const whole = await start();
    const [a, b] = [company(whole, 0), company(whole, 1)];
    const ofA = a.state.orders()[0]!.id;
    const patch = (key: string, id: string) =>
      call(whole.url, `/api/v1/orders/${id}/status`, key, { method: "PATCH", body: JSON.stringify({ status: "CONFIRMED" }) });
    const foreign = await patch(b.apiKey, ofA);
    const unknown = await patch(b.apiKey, "ord_nosuchone");
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect((await json(foreign)).error!.code).toBe((await json(unknown)).error!.code);
    expect(a.state.orders()[0]!.status).not.toBe("CONFIRMED");

    const single = createSandbox();
    opened.push(single);
    const singleUrl = await single.listen();
    for (const key of [undefined, "svc_live_unknown", "sk_test_123"]) {
      const [res, today] = [await call(whole.url, "/api/v1/orders", key), await call(singleUrl, "/api/v1/orders", key)];
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual(await today.json());
    }
  });

  it("keeps each company's rate window its own", async () => {
    const limit = { max: 3, windowMs: 60_000 };
    const whole = await start([{ rateLimit: limit }, { rateLimit: limit }]);
    const [a, b] = [company(whole, 0), company(whole, 1)];
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(whole.url, "/api/v1/menu-items", a.apiKey)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await call(whole.url, "/api/v1/menu-items", b.apiKey)).status).toBe(200);
  });

  it("signs a company's change with its own endpoint's secret and sends it to that endpoint only", async () => {
    const [hookA, hookB] = [await startReceiver(), await startReceiver()];
    const whole = await start();
    const [a, b] = [company(whole, 0), company(whole, 1)];
    a.addWebhook({ url: hookA.url, secret: "secret-a" });
    // The other company's endpoint registered through its own control route.
    const registered = await call(whole.url, "/_sandbox/companies/1/webhooks", undefined, {
      method: "POST",
      body: JSON.stringify({ url: hookB.url, secret: "secret-b" }),
    });
    expect(registered.status).toBe(201);

    a.actions.createOrder({ restaurantId: "rest_1" });
    await Promise.all([a.idle(), b.idle()]);
    expect(hookA.got).toHaveLength(1);
    expect(hookB.got).toHaveLength(0);
    const [delivered] = hookA.got;
    expect(verifySignature(Buffer.from(delivered!.body), delivered!.signature, ["secret-a"])).toBe(0);
    expect(() => verifySignature(Buffer.from(delivered!.body), delivered!.signature, ["secret-b"])).toThrow();

    const made = await call(whole.url, "/_sandbox/companies/1/actions/createOrder", undefined, {
      method: "POST",
      body: JSON.stringify({ restaurantId: "rest_2" }),
    });
    expect(made.status).toBe(200);
    await Promise.all([a.idle(), b.idle()]);
    expect(hookA.got).toHaveLength(1);
    expect(hookB.got).toHaveLength(1);
    expect(verifySignature(Buffer.from(hookB.got[0]!.body), hookB.got[0]!.signature, ["secret-b"])).toBe(0);
    expect(
      b.state
        .orders()
        .some((o) => o.restaurantId === "rest_2" && o.id === (JSON.parse(hookB.got[0]!.body) as { data: { id: string } }).data.id),
    ).toBe(true);
  });

  it("picks a company's controls by index; the plain controls stay for a single company", async () => {
    const whole = await start();
    const state = await call(whole.url, "/_sandbox/companies/1/state", undefined);
    expect(state.status).toBe(200);
    expect(((await state.json()) as { orders: { id: string }[] }).orders.map((o) => o.id)).toEqual(
      company(whole, 1)
        .state.orders()
        .map((o) => o.id),
    );
    expect((await call(whole.url, "/_sandbox/state", undefined)).status).toBe(400);
    expect((await call(whole.url, "/_sandbox/companies/2/state", undefined)).status).toBe(404);

    const one = await start([{}]);
    expect((await call(one.url, "/_sandbox/state", undefined)).status).toBe(200);
    expect((await call(one.url, "/nowhere", undefined)).status).toBe(404);
  });

  it("refuses a key given to two companies", () => {
    const key = "svc_live_0123456789abcdef0123456789abcdef";
    expect(() => createSandboxCompanies([{ apiKeys: [key] }, { unmeteredKeys: [key] }])).toThrow(/one company only/);
  });
});
