import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, type TestService } from "../helpers/service.js";

// Issue 21 item 11: each of these passed validation and then answered 500 from the database, or
// was read as something else (2026-02-30 as 2 March, trailing junk ignored).
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ ROLE: "web" });
});
afterAll(() => svc.stop());

describe("operator filters over HTTP", () => {
  it.each([
    ["/mirror/orders?from=0000-01-01", "from", /year 0000/],
    ["/mirror/orders?from=2026-02-30", "from", /not a calendar date: February 2026 has 28 days/],
    ["/mirror/bookings?to=2026-02-30", "to", /not a calendar date/],
    ["/mirror/orders/ord%00", "id", /control characters \(U\+0000\)/],
    ["/mirror/orders?restaurantId=rest%00", "restaurantId", /control characters/],
    [`/mirror/orders?cursor=${b64("id:ord\u0000")}`, "cursor", /cursor is not one this API returned/],
    [`/events?cursor=${b64("0000-01-01T00:00:00.000Z|evt_1")}`, "cursor", /its time has year 0000/],
    [`/events?cursor=${b64("+275760-09-13T00:00:00.000Z|evt_1")}`, "cursor", /cursor is not one this log returned/],
    ["/events?since=2026-02-30", "since", /since is not a calendar date: February 2026 has 28 days/],
    ["/events?since=2026-11-23%20junk", "since", /since must be a date \(2026-11-23\) or a timestamp with a zone/],
    ["/events?until=0000-01-01", "until", /year 0000/],
  ])("GET %s answers 400 naming what is wrong", async (path, _field, message) => {
    const res = await svc.admin(path);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect({ status: res.status, code: body.error.code }).toEqual({ status: 400, code: "invalid_filter" });
    expect(body.error.message).toMatch(message);
  });

  it("GET /events/evt%00 answers 400: no event can have that id", async () => {
    const res = await svc.admin("/events/evt%00");
    const body = (await res.json()) as { error: { code: string } };
    expect({ status: res.status, code: body.error.code }).toEqual({ status: 400, code: "invalid_event_id" });
  });

  it("still answers good filters", async () => {
    expect((await svc.admin("/mirror/orders?from=2024-02-29&to=2026-11-23T10:00:00%2B01:00")).status).toBe(200);
    expect((await svc.admin("/mirror/bookings?from=2026-11-20&to=2026-11-21")).status).toBe(200);
    expect((await svc.admin("/events?since=2026-11-23&until=2026-11-24T00:00:00Z")).status).toBe(200);
    expect((await svc.admin("/events/evt_unknown")).status).toBe(404);
  });
});
