import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/http/app.js";
import { mountConsole, type ConsoleSources } from "../../src/http/console/console-routes.js";
import type { SyncFailures } from "../../src/http/console/event-pages.js";
import { collectOpsSummary, createMetrics } from "../../src/metrics/metrics.js";
import type { EventDetail } from "../../src/mirror/storage.js";
import type { Problem } from "../../src/problems/problem.js";
import type { MinuteSample } from "../../src/metrics/minute-samples.js";
import type { CausedChange } from "../../src/mirror/record-story.js";

// The console's pages in memory through app.request(), over sources holding two accounts' events
// (default's and acme's) and acme's failed sync job: which account a page shows, Find across the
// accounts, durable steps, and the Failures page's sync jobs.
const TOKEN = "admin-token-for-tests-0123456789";
const NOW = new Date("2026-11-25T12:00:30Z");

const event = (id: string, steps: EventDetail["steps"] = []): EventDetail => ({
  id,
  type: "order.created",
  receivedAt: new Date("2026-11-25T12:00:00Z"),
  status: "handled",
  payload: { id, type: "order.created", data: { id: "ord_1" } },
  attempts: 1,
  handlers: { "user:order.created": { status: "ok", attempts: 1 } },
  updatedAt: new Date("2026-11-25T12:00:01Z"),
  handlerAttempts: [],
  steps,
});

const STEPS: EventDetail["steps"] = [
  {
    handler: "user:order.created",
    name: "charge-card",
    status: "done",
    runs: 2,
    attempt: 2,
    startedAt: new Date("2026-11-25T12:00:00.100Z"),
    finishedAt: new Date("2026-11-25T12:00:00.112Z"),
    durationMs: 12,
    resultBytes: 16,
    error: null,
  },
];

/** Each account's events by id. */
const LOGS: Record<string, Record<string, EventDetail>> = {
  default: { evt_default: event("evt_default") },
  acme: { evt_acme: event("evt_acme", STEPS) },
};

async function consolePage(
  path: string,
  options: {
    sync?: (account: string) => Promise<SyncFailures>;
    problems?: () => Promise<Problem[]>;
    changes?: ConsoleSources["changesBySource"];
    samples?: MinuteSample[];
  } = {},
) {
  const metrics = createMetrics();
  const summary = await collectOpsSummary(metrics, { kinds: ["orders"], rateMax: 120 });
  const none = () => Promise.resolve([]);
  const emptyPage = () => Promise.resolve({ data: [], nextCursor: null });
  const sources: ConsoleSources = {
    events: { get: (id, account = "default") => Promise.resolve(LOGS[account]?.[id]), query: emptyPage },
    changesAfter: none,
    changesBySource: options.changes ?? none,
    failureGroups: none,
    mirror: { kinds: ["orders"], get: () => Promise.resolve(undefined), list: emptyPage, bookkeeping: () => Promise.resolve(new Map()) },
    summary: () => Promise.resolve(summary),
    records: {
      kinds: ["orders"],
      story: () => Promise.resolve(undefined),
      refresh: () => Promise.reject(new Error("not asked")),
      find: none,
    },
    accounts: () => Promise.resolve([{ id: "acme" }]),
    health: () =>
      Promise.resolve({ summary, samples: options.samples ?? [], limits: { maxBacklog: 100_000, reconcileIntervalSeconds: 3600 } }),
    ...(options.sync ? { syncFailures: options.sync } : {}),
    ...(options.problems ? { openProblems: options.problems } : {}),
  };
  const app = createApp({
    logger: pino({ level: "silent" }),
    ready: () => Promise.resolve(),
    mount: (root) => mountConsole(root, { adminToken: TOKEN, sources, logger: pino({ level: "silent" }), now: () => NOW }),
  });
  const res = await app.request(path, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, location: res.headers.get("location"), html: await res.text() };
}

const title = (html: string) => /<title>([^<]*)<\/title>/.exec(html)?.[1];
const heading = (html: string) =>
  /<h1>(.*?)<\/h1>/s
    .exec(html)?.[1]
    ?.replace(/<[^>]+>/g, "")
    .replace(/\s+/g, " ")
    .trim();

describe("which account a console page shows", () => {
  it("is named in every page's title and heading, and the health page says it is of every account", async () => {
    const events = await consolePage("/console/events");
    expect(title(events.html)).toBe("Events · account default · svc-webhooks console");
    expect(heading(events.html)).toBe("Events · account default");
    const acme = await consolePage("/console/events/evt_acme?account=acme");
    expect(title(acme.html)).toBe("Event evt_acme · account acme · svc-webhooks console");
    expect(heading(acme.html)).toBe("Event evt_acme · account acme");
    const failures = await consolePage("/console/failures?account=acme");
    expect(heading(failures.html)).toBe("Failures · account acme");
    const health = await consolePage("/console/health?account=acme");
    expect(title(health.html)).toBe("Health · every account · svc-webhooks console");
  });
});

describe("Find", () => {
  it("opens the page's own account's event at once", async () => {
    const found = await consolePage("/console/events?id=evt_default");
    expect(found.status).toBe(302);
    expect(found.location).toBe("/console/events/evt_default");
  });

  it("looks in every account for an id the page's account does not hold, and says which holds it", async () => {
    const found = await consolePage("/console/events?id=evt_acme");
    expect(found.status).toBe(200);
    const notice = /data-testid="found-elsewhere">(.*?)<\/span>/s.exec(found.html)?.[1] ?? "";
    expect(notice).toContain("Account default holds nothing with id evt_acme; account acme holds it: ");
    expect(notice).toContain('<a href="/console/events/evt_acme?account=acme">event (order.created)</a>');
    const back = await consolePage("/console/events?id=evt_default&account=acme");
    expect(back.html).toContain('<a href="/console/events/evt_default">event (order.created)</a>');
  });

  it("says no account knows an id none holds (404)", async () => {
    const nowhere = await consolePage("/console/events?id=evt_nowhere");
    expect(nowhere.status).toBe(404);
    expect(nowhere.html).toContain("with id evt_nowhere in any account");
  });
});

describe("the event page", () => {
  it("shows durable steps as a table, one row a step, not as JSON", async () => {
    const { html } = await consolePage("/console/events/evt_acme?account=acme");
    const table = /<table data-testid="steps">(.*?)<\/table>/s.exec(html)?.[1] ?? "";
    expect(table).toContain("<th>Step</th>");
    const row = /<tr data-step="charge-card">(.*?)<\/tr>/s.exec(table)?.[1] ?? "";
    expect(
      row
        .replace(/<[^>]+>/g, "|")
        .split("|")
        .filter((cell) => cell.trim() !== ""),
    ).toEqual(expect.arrayContaining(["user:order.created", "charge-card", "done", "2", "12 ms", "16 B"]));
    expect(html).not.toContain('"resultBytes"');
  });
});

describe("the Failures page", () => {
  it("lists the account's sync jobs given up, with job, kind, cause and a way to replay each", async () => {
    const asked: string[] = [];
    const sync = (account: string) => {
      asked.push(account);
      return Promise.resolve({
        jobs: [
          {
            queue: "sync",
            job: "42",
            name: "refresh",
            account,
            kind: "orders",
            attempts: 3,
            reason: "GET /api/v1/orders on api.example.com answered 401",
            failedAt: new Date("2026-11-25T11:58:30Z"),
          },
        ],
        more: false,
      });
    };
    const { html } = await consolePage("/console/failures?account=acme", { sync });
    expect(asked).toEqual(["acme"]);
    const section = /<section data-testid="sync-failures">(.*?)<\/section>/s.exec(html)?.[1] ?? "";
    expect(section).toContain("1 sync job of this account given up");
    const row = /<tr data-sync-job="42">(.*?)<\/tr>/s.exec(section)?.[1] ?? "";
    expect(row).toContain("refresh");
    expect(row).toContain("orders");
    expect(row).toContain("GET /api/v1/orders on api.example.com answered 401");
    expect(row).toContain("2 min ago");
    expect(row).toContain('href="/admin/queues/queue/sync/42"');
    expect(row).toContain("svc-webhooks replay 42 --queue sync");
  });

  it("says none was given up, or that the sync queue could not be read", async () => {
    const none = await consolePage("/console/failures", { sync: () => Promise.resolve({ jobs: [], more: false }) });
    expect(none.html).toContain("No sync job of this account was given up.");
    const away = await consolePage("/console/failures", { sync: () => Promise.reject(new Error("Redis away")) });
    expect(away.status).toBe(200);
    expect(away.html).toContain("The sync queue could not be read");
  });
});

describe("the health page's open problems", () => {
  const refused: Problem = {
    id: "prb_1",
    account: "acme",
    kind: "key_refused",
    subject: "api.example.com",
    state: "open",
    openedAt: "2026-11-25T11:58:00.000Z",
    resolvedAt: null,
    lastSeenAt: "2026-11-25T12:00:00.000Z",
    count: 3,
    cause: "GET /api/v1/orders to api.example.com answered 401",
  };

  it("leads with each open problem: in words, whose, since, its cause and a link to what it is about", async () => {
    const { html } = await consolePage("/console/health", { problems: () => Promise.resolve([refused]) });
    const section = /<section class="card" data-testid="open-problems">(.*?)<\/section>/s.exec(html)?.[1] ?? "";
    expect(section).toContain("Open problems: 1");
    expect(section).toContain("the API refuses the account&#39;s key");
    expect(section).toContain("account acme");
    expect(section).toContain("GET /api/v1/orders to api.example.com answered 401");
    expect(section).toContain('href="/console/failures?account=acme"');
    // First on the page: above the verdict and the figures.
    expect(html.indexOf("open-problems")).toBeLessThan(html.indexOf("figures-"));
  });

  it("says there is none, and says so when they cannot be read", async () => {
    expect((await consolePage("/console/health", { problems: () => Promise.resolve([]) })).html).toContain("No open problem.");
    const away = await consolePage("/console/health", { problems: () => Promise.reject(new Error("database away")) });
    expect(away.status).toBe(200);
    expect(away.html).toContain("The open problems could not be read");
  });
});

describe("missed webhooks", () => {
  const found = (id: string, event: boolean): CausedChange => ({
    id,
    type: "change.order",
    receivedAt: new Date("2026-11-25T11:50:00Z"),
    kind: "order",
    recordId: "ord_7",
    before: { status: "PENDING" },
    after: { status: "CANCELLED" },
    changed: ["status"],
    source: "reconcile",
    event,
  });

  it("the health page's figure links to the changes it counts, in the page's account; none found, no link", async () => {
    const samples = [{ minute: Math.floor(NOW.getTime() / 60_000), values: { missed: 2 } }];
    const { html } = await consolePage("/console/health?account=acme", { samples });
    const row = /<th scope="row">Missed webhooks found, last hour<\/th>(.*?)<\/tr>/s.exec(html)?.[1] ?? "";
    expect(row).toContain('<a href="/console/changes?account=acme">2 changes</a>');
    const none = await consolePage("/console/health", { samples: [{ minute: samples[0]!.minute, values: { missed: 0 } }] });
    const quiet = /<th scope="row">Missed webhooks found, last hour<\/th>(.*?)<\/tr>/s.exec(none.html)?.[1] ?? "";
    expect(quiet).toContain("0 changes");
    expect(quiet).not.toContain("<a ");
  });

  it("lists the account's changes a sweep found, each linking to its record, from the range asked", async () => {
    const asked: unknown[] = [];
    const changes: ConsoleSources["changesBySource"] = (query, account) => {
      asked.push({ ...query, account });
      return Promise.resolve([found("chg_event", true), found("chg_history", false)]);
    };
    const page = await consolePage("/console/changes?account=acme", { changes });
    expect(page.status).toBe(200);
    expect(heading(page.html)).toBe("Missed webhooks · account acme");
    expect(asked).toEqual([{ source: "reconcile", since: new Date(NOW.getTime() - 3600_000), account: "acme" }]);
    expect(page.html).toContain("2 changes found by a reconciliation sweep, announced by no webhook");
    expect(page.html).toContain('<a href="/console/records/orders/ord_7?account=acme">ord_7</a>');
    // A change no handler received is history, not an event: no link to an event page it does not have.
    expect(page.html).toContain('<a href="/console/events/chg_event?account=acme">chg_event</a>');
    expect(page.html).not.toContain("/console/events/chg_history");
    await consolePage("/console/changes?source=webhook&range=24h", { changes });
    expect(asked[1]).toEqual({ source: "webhook", since: new Date(NOW.getTime() - 86_400_000), account: "default" });
  });

  it("refuses a source it does not know, reading nothing", async () => {
    let reads = 0;
    const changes: ConsoleSources["changesBySource"] = () => {
      reads++;
      return Promise.resolve([]);
    };
    const page = await consolePage("/console/changes?source=guess", { changes });
    expect(page.status).toBe(400);
    expect(page.html).toContain("source must be one of webhook, reconcile, backfill");
    expect((await consolePage("/console/changes?range=forever", { changes })).status).toBe(400);
    expect(reads).toBe(0);
    expect((await consolePage("/console/changes", { changes })).html).toContain("No change found by a reconciliation sweep");
  });
});
