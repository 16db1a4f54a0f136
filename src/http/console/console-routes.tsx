import { Hono, type Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Logger } from "pino";
import type { EventPage as LogPage, FailureGroup } from "../../mirror/event-log.js";
import { printable } from "../../mirror/values.js";
import type { CausedChange } from "../../mirror/record-story.js";
import type { EventDetail } from "../../mirror/storage.js";
import { toHttpFailure } from "../errors.js";
import { consoleHeaders, operatorGuards } from "../guards.js";
import { eventIdParam, type MirrorReader, type RecordReader } from "../operator-routes.js";
import type { AppEnv } from "../request-log.js";
import type { OpsSummary } from "../../metrics/metrics.js";
import { EventPage, EventsPage, FailuresPage, logQueryOf, parseEventFilters } from "./event-pages.js";
import { HealthPage, type HealthView } from "./health-page.js";
import { CONSOLE_PATH, CONSOLE_SCRIPT, CONSOLE_STYLE, Layout, parseRangePreset, presetSince, refuseUnknown } from "./layout.js";
import { MIRROR_PAGE_SIZE, MirrorPage, parseMirrorFilters, RecordPage, recordHref } from "./mirror-pages.js";

/**
 * What the console reads; the service wires the event log, the mirror and the metrics in (http
 * runs none of them: it imports only the types of what they return, which vanish at runtime).
 * Every read is an operator read: bounded in time, a coded error on bad input.
 */
export interface ConsoleSources {
  events: {
    /** `account`: `?account=` (none: default). */
    get(id: string, account?: string): Promise<EventDetail | undefined>;
    /** GET /events's query: its parameters, strictly (a bad one throws invalid_filter). */
    query(query: Record<string, string>): Promise<LogPage>;
  };
  /** Change events recorded for the record an event named, after it (see mirror/record-story.ts). */
  changesAfter(event: EventDetail): Promise<CausedChange[]>;
  failureGroups(range: { since: Date; until?: Date | undefined }): Promise<FailureGroup[]>;
  mirror: MirrorReader & {
    /** When each listed record was last read from the API and written here. */
    bookkeeping(kind: string, ids: readonly string[]): Promise<Map<string, { readAt: Date; syncedAt: Date }>>;
  };
  summary(): Promise<OpsSummary>;
  records: RecordReader & {
    /** The kinds holding a record of this id (the mirror's, else the kinds of the events naming it); empty when none. */
    find(id: string): Promise<string[]>;
  };
  /** The health page's data: the summary, the shared minute samples of the hour up to `now`, the config's limits. */
  health(now: Date): Promise<Omit<HealthView, "now">>;
}

export interface ConsoleOptions {
  adminToken: string;
  sources: ConsoleSources;
  /** Where a page's unexpected failure (a 500) is logged. */
  logger: Logger;
  /** The clock pages measure "ago" against (tests); default the system's. */
  now?: () => Date;
}

const asset = (body: string, type: string) => (c: Context<AppEnv>) =>
  c.body(body, 200, { "Content-Type": type, "Cache-Control": "private, max-age=300" });

/**
 * Mounts the operator console at /console: server-rendered pages (hono/jsx) over the event log,
 * the mirror and the metrics, behind the operator auth and CSRF rules, with a strict CSP. Its
 * buttons call the operator API (POST /events/{id}/replay, POST /events/replay,
 * GET /events/replays/{id}) from its one same-origin script.
 */
export function mountConsole(app: Hono<AppEnv>, options: ConsoleOptions): void {
  const now = options.now ?? (() => new Date());
  // "/console/*" matches "/console" itself too.
  app.use(`${CONSOLE_PATH}/*`, ...operatorGuards(options.adminToken, consoleHeaders()));
  app.route(CONSOLE_PATH, consoleRoutes(options.sources, now, options.logger));
}

function consoleRoutes(sources: ConsoleSources, now: () => Date, logger: Logger): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.get("/", (c) => c.redirect(`${CONSOLE_PATH}/events`));
  route.get("/assets/console.css", asset(CONSOLE_STYLE, "text/css; charset=utf-8"));
  route.get("/assets/console.js", asset(CONSOLE_SCRIPT, "text/javascript; charset=utf-8"));

  route.get("/events", async (c) => {
    const filters = parseEventFilters(c.req.query());
    if (filters.id !== undefined) {
      // Any id: an event's opens its page, else the record page of the kind that holds it.
      const found = await sources.events.get(filters.id);
      if (found) return c.redirect(`${CONSOLE_PATH}/events/${encodeURIComponent(found.id)}`);
      const kind = (await sources.records.find(filters.id))[0];
      if (kind !== undefined) return c.redirect(recordHref(kind, filters.id));
      const page = await sources.events.query(logQueryOf({ range: "all" }, now()));
      const notice = `No event, order, booking, menu item or review with id ${printable(filters.id)}: neither the event log nor the mirror knows it.`;
      return c.html(<EventsPage filters={filters} page={page} now={now()} notice={notice} />, 404);
    }
    const page = await sources.events.query(logQueryOf(filters, now()));
    return c.html(<EventsPage filters={filters} page={page} now={now()} />);
  });

  route.get("/events/:id", async (c) => {
    refuseUnknown(c.req.query(), []);
    const id = eventIdParam(c);
    const event = await sources.events.get(id);
    if (!event) return errorPage(c, 404, `No event ${printable(id)} in the log.`);
    return c.html(<EventPage event={event} changes={await sources.changesAfter(event)} now={now()} />);
  });

  route.get("/failures", async (c) => {
    refuseUnknown(c.req.query(), ["range"]);
    const range = parseRangePreset(c.req.query("range"), "24h");
    const at = now();
    const since = presetSince(range === "all" ? "7d" : range, at) ?? at;
    const groups = await sources.failureGroups({ since });
    return c.html(<FailuresPage groups={groups} range={range === "all" ? "7d" : range} since={since} now={at} />);
  });

  route.get("/mirror", (c) => c.redirect(`${CONSOLE_PATH}/mirror/${sources.mirror.kinds[0] ?? "orders"}`));
  route.get("/mirror/:kind", async (c) => {
    const kind = c.req.param("kind");
    if (!sources.mirror.kinds.includes(kind)) return errorPage(c, 404, `Mirror kinds are ${sources.mirror.kinds.join(", ")}.`);
    const filters = parseMirrorFilters(c.req.query());
    const page = await sources.mirror.list(kind, { ...filters, limit: String(MIRROR_PAGE_SIZE) });
    const records = page.data as Record<string, unknown>[];
    const ids = records.map((r) => String(r.id));
    const times = await sources.mirror.bookkeeping(kind, ids);
    const rows = records.map((record) => ({ record, ...times.get(String(record.id)) }));
    return c.html(
      <MirrorPage kinds={sources.mirror.kinds} kind={kind} filters={filters} rows={rows} nextCursor={page.nextCursor} now={now()} />,
    );
  });

  route.get("/records/:kind/:id", async (c) => {
    refuseUnknown(c.req.query(), ["cursor"]);
    const { kind, id } = c.req.param();
    if (!sources.records.kinds.includes(kind)) return errorPage(c, 404, `Record kinds are ${sources.records.kinds.join(", ")}.`);
    const cursor = c.req.query("cursor");
    const story = await sources.records.story(kind, id, cursor);
    if (!story) return errorPage(c, 404, `No ${kind} record ${printable(id)}: neither the mirror nor the event log knows it.`);
    return c.html(<RecordPage story={story} cursor={cursor} now={now()} />);
  });

  route.get("/health", async (c) => {
    const at = now();
    return c.html(<HealthPage view={{ ...(await sources.health(at)), now: at }} />);
  });
  route.get("/health.json", async (c) => c.json(await sources.summary()));

  route.notFound((c) => errorPage(c, 404, `No console page at ${c.req.path.slice(0, 200)}.`));
  // Bad filters (400), a query past its time budget (503) and the rest, as a page rather than JSON.
  route.onError((err, c) => {
    const failure = toHttpFailure(err);
    if (failure.status >= 500 && failure.status !== 503) logger.error({ err }, "console page failed");
    return errorPage(c, failure.status, failure.body.error.message);
  });
  return route;
}

function errorPage(c: Context<AppEnv>, status: ContentfulStatusCode, message: string) {
  return c.html(
    <Layout title={status >= 500 ? "Could not load this page" : "Not here"} section="events">
      <p class="notice">{message}</p>
      <p>
        <a href={`${CONSOLE_PATH}/events`}>Back to the events</a>
      </p>
    </Layout>,
    status,
  );
}
