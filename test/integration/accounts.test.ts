import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig, ConfigError } from "../../src/config/config.js";
import { signPayload } from "../../src/events/envelope.js";
import { type AccountRegistry, createAccountDirectory, createAccountRegistry, createSecretsBox } from "../../src/mirror/accounts.js";
import type { AnyEvent } from "../../src/events/catalog.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { waitFor } from "../helpers/wait-for.js";
import { reviewRecord } from "../helpers/mirror-records.js";

const KEY = randomBytes(32);
const ACME = { id: "acme", apiKey: "svc_live_acme_key_0123456789", signingSecret: "whsec_acme_secret_0123456789" };

describe("the secrets box (AES-256-GCM)", () => {
  const box = createSecretsBox(KEY);

  it("opens what it sealed, only with the same key and context, and never the same text twice", () => {
    const sealed = box.seal("svc_live_x", "acme/apiKey");
    expect(sealed).not.toContain("svc_live_x");
    expect(box.seal("svc_live_x", "acme/apiKey")).not.toBe(sealed);
    expect(box.open(sealed, "acme/apiKey")).toBe("svc_live_x");
    // Copied into another account's row, or under another key, it does not open.
    expect(() => box.open(sealed, "globex/apiKey")).toThrow();
    expect(() => createSecretsBox(randomBytes(32)).open(sealed, "acme/apiKey")).toThrow();
    const [v, iv, tag, body = ""] = sealed.split(".");
    // One character of the body changed: the second to last (the last may hold only padding bits), never to itself.
    const changed = body.at(-2) === "A" ? "B" : "A";
    const flipped = `${v}.${iv}.${tag}.${body.slice(0, -2)}${changed}${body.slice(-1)}`;
    expect(() => box.open(flipped, "acme/apiKey")).toThrow();
  });
});

describe("SECRETS_KEY", () => {
  const base = { SIGNING_SECRET: TEST_SECRET };
  it("takes 32 bytes as 64 hex digits or base64, and refuses anything else naming the variable, never the value", () => {
    expect(loadConfig({ ...base, SECRETS_KEY: KEY.toString("hex") }).secretsKey).toEqual(KEY);
    expect(loadConfig({ ...base, SECRETS_KEY: KEY.toString("base64") }).secretsKey).toEqual(KEY);
    expect(loadConfig(base).secretsKey).toBeUndefined();
    for (const wrong of ["short-and-not-a-key", randomBytes(16).toString("hex"), randomBytes(31).toString("base64")]) {
      const err = (() => {
        try {
          loadConfig({ ...base, SECRETS_KEY: wrong });
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect(err?.message).toContain("SECRETS_KEY must be 32 bytes");
      expect(err?.message).not.toContain(wrong);
    }
  });
});

describe("the accounts registry", () => {
  let database: TestDatabase;
  let registry: AccountRegistry;
  beforeAll(async () => {
    database = await openTestDatabase(preferredDriver());
    registry = createAccountRegistry(database.db, createSecretsBox(KEY));
  });
  afterAll(() => database.close());
  beforeEach(async () => {
    await sql`truncate accounts, events`.execute(database.db);
  });

  it("adds an account, lists it without its key or secrets, and stores no value in clear", async () => {
    const added = await registry.add(ACME);
    expect(added).toMatchObject({ id: "acme", signingSecrets: 1 });
    expect(JSON.stringify(await registry.list())).not.toMatch(/svc_live|whsec/);
    const rows = await sql<{ row: string }>`select accounts::text as row from accounts`.execute(database.db);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]?.row).not.toContain(ACME.apiKey);
    expect(rows.rows[0]?.row).not.toContain(ACME.signingSecret);
    const [keys, ...others] = await registry.keys();
    expect(others).toEqual([]);
    expect(keys).toEqual({
      id: "acme",
      apiKey: ACME.apiKey,
      signingSecrets: [ACME.signingSecret],
      signatureScheme: "svc",
      incarnation: keys?.incarnation,
    });
    expect(keys?.incarnation).toMatch(/^[0-9a-f]{12}$/);
  });

  it("refuses a duplicate id, a malformed id, key or secret, and unknown fields, naming the field and changing nothing", async () => {
    await registry.add(ACME);
    await expect(registry.add({ ...ACME, apiKey: "svc_live_other_0123456789" })).rejects.toMatchObject({
      code: "account_exists",
      field: "id",
    });
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ACME, id: "Acme Corp" }, "id"],
      [{ ...ACME, id: "default" }, "id"],
      [{ ...ACME, id: "x".repeat(64) }, "id"],
      [{ ...ACME, id: "globex", apiKey: "sk_test_nope_value" }, "apiKey"],
      [{ ...ACME, id: "globex", signingSecret: "tiny-value" }, "signingSecret"],
      [{ id: "globex", apiKey: ACME.apiKey }, "signingSecret"],
      [{ ...ACME, id: "globex", extra: 1 }, "extra"],
    ];
    for (const [input, field] of cases) {
      const err = (await registry.add(input).then(
        () => undefined,
        (e: unknown) => e,
      )) as { code: string; field: string; message: string } | undefined;
      expect(err, JSON.stringify(input)).toMatchObject({ code: "invalid_account", field });
      // The field's name and rule, never the value sent.
      expect(err?.message).not.toMatch(/sk_test_nope_value|tiny-value|svc_live_acme|whsec_acme/);
    }
    expect((await registry.list()).map((a) => a.id)).toEqual(["acme"]);
  });

  it("rotates: a new signing secret first, the old ones retired, the API key replaced", async () => {
    await registry.add(ACME);
    const next = "whsec_acme_next_secret_0123";
    expect(await registry.rotate("acme", { signingSecret: next })).toMatchObject({ signingSecrets: 2 });
    expect((await registry.keys())[0]?.signingSecrets).toEqual([next, ACME.signingSecret]);
    await registry.rotate("acme", { retireOldSecrets: true, apiKey: "svc_live_acme_second_key_01" });
    const [rotated] = await registry.keys();
    expect(rotated).toEqual({
      id: "acme",
      apiKey: "svc_live_acme_second_key_01",
      signingSecrets: [next],
      signatureScheme: "svc",
      incarnation: rotated?.incarnation,
    });
    await expect(registry.rotate("acme", {})).rejects.toMatchObject({ code: "invalid_account" });
    await expect(registry.rotate("nope", { retireOldSecrets: true })).rejects.toMatchObject({ code: "account_not_found" });
    // The id a refusal names is bounded, wherever it came from (the edge's path, the operator API's, the CLI).
    const refused = await registry.rotate(`${"y".repeat(500)}\n`, { retireOldSecrets: true }).catch((err: unknown) => err as Error);
    expect(refused).toMatchObject({ code: "account_not_found" });
    expect((refused as Error).message).toBe(`no account ${"y".repeat(80)}…`);
  });

  it("opens each account's values once: a read after a registration opens the new account's alone, one after a rotation that account's again", async () => {
    const box = createSecretsBox(KEY);
    let opens = 0;
    const counting = createAccountRegistry(database.db, {
      seal: (plain, context) => box.seal(plain, context),
      open: (sealed, context) => (opens++, box.open(sealed, context)),
    });
    await counting.add(ACME);
    await counting.keys();
    expect(opens).toBe(2);
    await counting.add({ ...ACME, id: "globex", apiKey: "svc_live_globex_key_0123456" });
    opens = 0;
    expect((await counting.keys()).map((a) => a.id)).toEqual(["acme", "globex"]);
    expect(opens).toBe(2);
    const next = "whsec_acme_next_secret_0123";
    await counting.rotate("acme", { signingSecret: next });
    opens = 0;
    const [counted] = await counting.keys();
    expect(counted).toEqual({
      id: "acme",
      apiKey: ACME.apiKey,
      signingSecrets: [next, ACME.signingSecret],
      signatureScheme: "svc",
      incarnation: counted?.incarnation,
    });
    expect(opens).toBe(3);
  });

  it("without SECRETS_KEY refuses to add, naming it; with another key the account is left out of the opened list, alone", async () => {
    const keyless = createAccountRegistry(database.db, undefined);
    await expect(keyless.add(ACME)).rejects.toMatchObject({
      code: "secrets_key_missing",
      message: expect.stringContaining("SECRETS_KEY") as string,
    });
    await registry.add(ACME);
    await createAccountRegistry(database.db, createSecretsBox(randomBytes(32))).add({ ...ACME, id: "globex" });
    const unopened: string[] = [];
    expect((await registry.keys({ onUnopened: (id) => unopened.push(id) })).map((a) => a.id)).toEqual(["acme"]);
    expect(unopened).toEqual(["globex"]);
    const directory = createAccountDirectory(registry);
    await directory.start();
    expect(directory.get("acme")?.signingSecrets).toEqual([ACME.signingSecret]);
    expect(() => directory.get("globex")).toThrow(/do not open with this SECRETS_KEY/);
    expect(directory.get("initech")).toBeUndefined();
    directory.close();
  });

  it("removes an account; with purge its rows, events and steps go, another account's stay", async () => {
    await registry.add(ACME);
    await registry.add({ ...ACME, id: "globex" });
    for (const account of ["acme", "globex"])
      await sql`insert into events (account_id, id, type, payload, status) values (${account}, 'evt_1', 'order.created', '{}', 'handled')`.execute(
        database.db,
      );
    await registry.remove("globex");
    await registry.remove("acme", { purge: true });
    expect(await registry.list()).toEqual([]);
    const left = await sql<{ account_id: string }>`select account_id from events order by 1`.execute(database.db);
    expect(left.rows).toEqual([{ account_id: "globex" }]);
    await expect(registry.remove("acme")).rejects.toMatchObject({ code: "account_not_found" });
  });
});

describe("accounts at the edge and through the operator API", () => {
  let svc: TestService;
  const seen: AnyEvent[] = [];
  const contexts = new Map<string, { account: string; mirror: string; api: string }>();
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${svc.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const deliverTo = (path: string, event: object, secret: string, extraBytes = 0) => {
    const text = JSON.stringify({ ...event, pad: "x".repeat(extraBytes) });
    return fetch(`${svc.url}/webhooks${path}`, {
      method: "POST",
      body: text,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(text, secret) },
    });
  };
  beforeAll(async () => {
    svc = await startService({ SECRETS_KEY: KEY.toString("base64") }, [
      {
        "*": async (e, ctx) => {
          seen.push(e);
          const api = await ctx.api.listOrders({ restaurantId: "rest_1" }).then(
            () => "answered",
            (err: unknown) => (err as Error).message,
          );
          contexts.set(e.id, { account: ctx.account, mirror: ctx.mirror.account, api });
        },
      },
    ]);
  });
  afterAll(() => svc.stop());

  it("serves a registered account at /webhooks/{id} with its own secrets, logs its events under it, and stops at once when removed", async () => {
    expect((await call("POST", "/accounts", ACME)).status).toBe(201);
    const dup = await call("POST", "/accounts", ACME);
    expect(dup.status).toBe(409);
    const bad = await call("POST", "/accounts", { ...ACME, id: "Not A Slug" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^id /);
    const listed = await call("GET", "/accounts");
    expect(await listed.text()).not.toMatch(/svc_live|whsec/);

    const event = sampleEvent({ type: "guest.visited", data: {} });
    expect((await deliverTo("/acme", event, ACME.signingSecret)).status).toBe(200);
    // The built-in sync stores acme's review in acme's mirror, not in the default company's.
    const review = sampleEvent({ type: "review.created", data: reviewRecord("rev_acme") });
    expect((await deliverTo("/acme", review, ACME.signingSecret)).status).toBe(200);
    // Signed with the default company's secret, or for an account nobody registered (its body never read, so no 413).
    expect((await deliverTo("/acme", sampleEvent(), TEST_SECRET)).status).toBe(401);
    const unknown = await deliverTo("/initech", sampleEvent(), ACME.signingSecret, 2 * 1024 * 1024);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("account_not_found");
    // Counted as a refusal, by its reason.
    const rejected = (await svc.service.metrics.eventsRejected.get()).values.find((v) => v.labels.reason === "unknown_account");
    expect(rejected?.value).toBe(1);
    // An id from outside is echoed bounded.
    const long = await deliverTo(`/${"x".repeat(5000)}`, sampleEvent(), ACME.signingSecret);
    expect(long.status).toBe(404);
    expect(((await long.json()) as { error: { message: string } }).error.message.length).toBeLessThan(120);

    const storage = svc.database;
    await waitFor(() => seen.some((e) => e.id === event.id), { what: "the account's event handled" });
    expect(seen.find((e) => e.id === event.id)?.account).toBe("acme");
    // Its handlers' context is the account's: its mirror, and its API (none on this service, which says so).
    expect(contexts.get(event.id)).toEqual({
      account: "acme",
      mirror: "acme",
      api: expect.stringContaining("this service has no upstream API") as string,
    });
    // Every handler of it done (the log says handled), then the default mirror is read.
    await waitFor(
      async () =>
        (await sql`select 1 from events where id = ${review.id} and status = 'handled'`.execute(svc.database.db)).rows.length === 1,
      { what: "the account's review handled" },
    );
    expect(await svc.service.mirror.get("reviews", "rev_acme")).toBeUndefined();
    const reviews = await sql<{ account_id: string }>`select account_id from reviews where id = 'rev_acme'`.execute(storage.db);
    expect(reviews.rows).toEqual([{ account_id: "acme" }]);
    await waitFor(async () => (await sql`select 1 from events where id = ${event.id}`.execute(storage.db)).rows.length === 1, {
      what: "the event logged",
    });
    const rows = await sql<{ account_id: string }>`select account_id from events where id = ${event.id}`.execute(storage.db);
    expect(rows.rows).toEqual([{ account_id: "acme" }]);
    // Operator reads name the account (`?account=`, else default).
    expect((await call("GET", `/events/${event.id}?account=acme`)).status).toBe(200);
    expect((await call("GET", `/events/${event.id}`)).status).toBe(404);
    const listedEvents = (await (await call("GET", "/events?account=acme")).json()) as { data: { id: string }[] };
    expect(listedEvents.data.map((e) => e.id).sort()).toEqual([event.id, review.id].sort());
    expect(((await (await call("GET", "/events")).json()) as { data: unknown[] }).data).toEqual([]);
    expect((await call("GET", "/events?account=Not%20A%20Slug")).status).toBe(400);
    expect((await call("GET", `/records/reviews/rev_acme?account=acme`)).status).toBe(200);
    expect((await call("GET", `/records/reviews/rev_acme`)).status).toBe(404);
    // Replayed as acme's: read from its part of the log, run as its event again, recorded there.
    expect((await call("POST", `/events/${event.id}/replay`, {})).status).toBe(404);
    expect((await call("POST", `/events/${event.id}/replay?account=acme`, {})).status).toBe(202);
    await waitFor(
      async () =>
        (await sql<{ attempts: number }>`select attempts from events where account_id = 'acme' and id = ${event.id}`.execute(storage.db))
          .rows[0]?.attempts === 2,
      { what: "acme's event replayed" },
    );
    expect(seen.filter((e) => e.id === event.id).map((e) => e.account)).toEqual(["acme", "acme"]);
    // Replayed by filter too, as a bulk replay of acme's events only (the default company's log holds no such type).
    const replayByType = (query: string, body: object) =>
      call("POST", `/events/replay${query}`, { filter: { type: "guest.visited" }, ...body });
    expect(await (await replayByType("", { dryRun: true })).json()).toEqual({ count: 0 });
    expect(await (await replayByType("?account=acme", { dryRun: true })).json()).toEqual({ count: 1 });
    expect((await replayByType("?account=Not%20A%20Slug", { dryRun: true })).status).toBe(400);
    const bulk = await replayByType("?account=acme", {});
    expect(bulk.status).toBe(202);
    const { id: bulkId } = (await bulk.json()) as { id: string };
    await waitFor(async () => ((await (await call("GET", `/events/replays/${bulkId}`)).json()) as { done: number }).done === 1, {
      what: "acme's bulk replay done",
    });
    expect(seen.filter((e) => e.id === event.id).map((e) => e.account)).toEqual(["acme", "acme", "acme"]);
    // The same event id at the default endpoint is the default company's own event, not a duplicate of acme's.
    const again = await svc.deliver(event);
    expect(((await again.json()) as { duplicate: boolean }).duplicate).toBe(false);

    expect((await call("DELETE", "/accounts/acme")).status).toBe(200);
    expect((await deliverTo("/acme", sampleEvent(), ACME.signingSecret)).status).toBe(404);
    expect((await call("DELETE", "/accounts/acme")).status).toBe(404);
    // No key or secret reached a log line.
    expect(svc.logs.text()).not.toMatch(/svc_live_acme|whsec_acme/);
  });
});
