import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { sampleEvent } from "../helpers/edge.js";
import { waitFor } from "../helpers/wait-for.js";

// One company's flood must not hold up another's deliveries: the stream consumer's handler slots
// go to the account running the fewest, and one account holds at most
// WORKER_CONCURRENCY_PER_ACCOUNT of them (queue/fair-slots.ts). Here the flooding company's
// handler hangs until released, so in arrival order the quiet company's event could never run.

const FLOOD = { id: "flood", apiKey: "svc_live_flood_key_0123456789", signingSecret: "whsec_flood_secret_0123456789" };
let svc: TestService;
let release: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (release = resolve));
const handled: { account: string; id: string }[] = [];

beforeAll(async () => {
  svc = await startService(
    { SECRETS_KEY: randomBytes(32).toString("base64"), WORKER_CONCURRENCY: "2", WORKER_CONCURRENCY_PER_ACCOUNT: "1" },
    [
      {
        "*": async (e, ctx) => {
          if (e.type !== "guest.visited") return;
          if (ctx.account === "flood") await gate;
          handled.push({ account: ctx.account, id: e.id });
        },
      },
    ],
  );
  const added = await fetch(`${svc.url}/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(FLOOD),
  });
  expect(added.status).toBe(201);
});
afterAll(async () => {
  release();
  await svc.stop();
});

it("runs a quiet company's event while another company's flood holds every slot it can take", async () => {
  const flood = Array.from({ length: 30 }, () => sampleEvent({ type: "guest.visited", data: {} }));
  for (const event of flood) expect((await svc.deliverTo("flood", event, FLOOD.signingSecret)).status).toBe(200);
  const quiet = sampleEvent({ type: "guest.visited", data: {} });
  expect((await svc.deliver(quiet)).status).toBe(200);
  // Two slots: the flood holds its one (its first event hangs), the other serves the quiet company.
  await waitFor(() => handled.some((h) => h.id === quiet.id), { what: "the quiet company's event handled during the flood" });
  expect(handled.filter((h) => h.account === "flood")).toEqual([]);
  release();
  await waitFor(() => handled.filter((h) => h.account === "flood").length === flood.length, { what: "the flood handled once released" });
});
