import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";

// What the event log keeps is what was signed: a body whose parsed form would differ is refused
// at the edge (docs/edge.md), and a body it accepts is logged value for value.
let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

describe("the stored payload is the signed one", () => {
  it("refuses a number or key the parsed form would change, and logs an accepted body value for value", async () => {
    svc = await startService();
    const refusedIds = [`evt_inf_${randomUUID()}`, `evt_proto_${randomUUID()}`];
    const refused = [
      `{"id":"${refusedIds[0]}","type":"order.created","data":{"n":1e400}}`,
      `{"id":"${refusedIds[1]}","type":"order.created","__proto__":{"admin":true},"data":{}}`,
    ];
    for (const body of refused) {
      const res = await svc.deliver(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "unkeepable_payload" } });
    }
    const kept = `{"id":"evt_kept_${randomUUID()}","type":"order.created","data":{"n":1e300,"big":10000000000000000000,"s":"__proto__"}}`;
    const id = (JSON.parse(kept) as { id: string }).id;
    const done = nextFinished(svc.service.worker!, "completed", (e) => e.id === id);
    expect((await svc.deliver(kept)).status).toBe(200);
    await done;
    expect((await svc.service.eventLog.get(id))?.payload).toEqual(JSON.parse(kept));
    for (const refusedId of refusedIds) expect(await svc.service.eventLog.get(refusedId)).toBeUndefined();
  });
});
