import { Hono, type Context } from "hono";
import type { Child } from "hono/jsx";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Logger } from "pino";
import { DEFAULT_ACCOUNT } from "../../config/defaults.js";
import { accountParam } from "../../mirror/accounts.js";
import type { EventPage as LogPage, FailureGroup } from "../../mirror/event-log.js";
import type { RecordBookkeeping } from "../../mirror/mirror-store.js";
import { printable } from "../../base/text.js";
import type { CausedChange } from "../../mirror/record-story.js";
import { CHANGE_SOURCES, type ChangeSource } from "../../events/catalog.js";
import { MirrorFilterError } from "../../mirror/errors.js";
import type { EventDetail } from "../../mirror/storage.js";
import { toHttpFailure } from "../errors.js";
import { consoleHeaders, operatorGuards } from "../guards.js";
import {
  CONSOLE_PATH,
  eventIdParam,
  kindsAre,
  unknownRecord,
  type EventLogReader,
  type MirrorReader,
  type RecordReader,
} from "../operator-routes.js";
import { quietRequest, type AppEnv } from "../request-log.js";
import type { OpsSummary } from "../../metrics/metrics.js";
import { ChangesPage, EventPage, EventsPage, FailuresPage, logQueryOf, parseEventFilters, type SyncFailures } from "./event-pages.js";
import { HealthPage, type HealthView } from "./health-page.js";
import { OpenProblems } from "./problems-section.js";
import type { Problem } from "../../problems/problem.js";
import {
  CONSOLE_SCRIPT,
  CONSOLE_STYLE,
  eventHref,
  hrefWith,
  Layout,
  parseRangePreset,
  presetSince,
  refuseUnknown,
  Scope,
  type ListedAccount,
  type PageScope,
  type RangePreset,
} from "./layout.js";
import { ANY_RECORD_NOUN, MIRROR_PAGE_SIZE, MirrorPage, parseMirrorFilters, RecordPage, recordHref } from "./mirror-pages.js";

/**
 * What the console reads; the service wires the event log, the mirror and the metrics in (http
 * runs none of them: it imports only the types of what they return, which vanish at runtime).
 * Every read is an operator read: bounded in time, a coded error on bad input. Each page reads one
 * account: `account` is the page's `?account=` as accountParam checked it (`default` when none).
 */
export interface ConsoleSources {
  /** As GET /events and GET /events/{id} read it (a bad parameter throws invalid_filter). */
  events: EventLogReader<EventDetail, LogPage>;
  /** Change events recorded for the record an event named, after it (see mirror/record-story.ts). */
  changesAfter(event: EventDetail, account: string): Promise<CausedChange[]>;
  /** The account's changes of one source since a moment, newest first (the missed webhooks with `reconcile`). */
  changesBySource(query: { source: ChangeSource; since: Date }, account: string): Promise<CausedChange[]>;
  failureGroups(range: { since: Date; until?: Date | undefined }, account: string): Promise<FailureGroup[]>;
  /**
   * The sync queue's failed jobs of the account (queue/failed-jobs.ts), bounded in time; absent (no
   * sync queue here): the Failures page says so. A rejection shows the page without them.
   */
  syncFailures?: (account: string) => Promise<SyncFailures>;
  mirror: MirrorReader & {
    /** When each listed record was last read from the API and written here. */
    bookkeeping(kind: string, ids: readonly string[], account: string): Promise<Map<string, RecordBookkeeping>>;
  };
  summary(): Promise<OpsSummary>;
  records: RecordReader & {
    /** The kinds holding a record of this id (the mirror's, else the kinds of the events naming it); empty when none. */
    find(id: string, account: string): Promise<string[]>;
  };
  /**
   * The registered accounts with their sync state, as GET /accounts lists them: the header's
   * switcher and the health page's table. Bounded in time, as the health page shows while the
   * database is away. Absent (a console mounted without the registry): no switcher.
   */
  accounts?: () => Promise<ListedAccount[]>;
  /** The open problems (problems/), bounded in time; the health page leads with them. Absent: none shown. */
  openProblems?: () => Promise<Problem[]>;
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

/**
 * A page's query: the account it reads (accountParam: a bad one is a 400 naming `account`) and its
 * own parameters; given the parameters it knows, any other is refused (refuseUnknown).
 */
function pageQuery(c: Context<AppEnv>, known?: readonly string[]): { account: string; params: Record<string, string> } {
  const { account, ...params } = c.req.query();
  const query = { account: accountParam(account), params };
  if (known) refuseUnknown(params, known);
  return query;
}

/** An operator API's answer as a page says it: "mirror kinds are …" → "Mirror kinds are ….". */
const asSentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;

/** A page in its scope (PageScope): the account its links keep, and what its header offers. */
const html = (c: Context<AppEnv>, scope: PageScope, page: Child, status: ContentfulStatusCode = 200) =>
  c.html(<Scope.Provider value={scope}>{page}</Scope.Provider>, status);

function consoleRoutes(sources: ConsoleSources, now: () => Date, logger: Logger): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const scopeOf = pageScopes(sources, logger);
  // A page of its account: the header's switcher and every link on it keep that account.
  const render = async (c: Context<AppEnv>, account: string, page: Child, status: ContentfulStatusCode = 200) =>
    html(c, await scopeOf(c, account), page, status);
  const notFound = (c: Context<AppEnv>, account: string, message: string) =>
    render(c, account, <ErrorPage status={404} message={message} />, 404);

  route.get("/", (c) => c.redirect(hrefWith(`${CONSOLE_PATH}/events`, {}, pageQuery(c).account)));
  route.use("/assets/*", quietRequest);
  route.get("/assets/console.css", asset(CONSOLE_STYLE, "text/css; charset=utf-8"));
  route.get("/assets/console.js", asset(CONSOLE_SCRIPT, "text/javascript; charset=utf-8"));

  route.get("/events", async (c) => {
    const { account, params } = pageQuery(c);
    const filters = parseEventFilters(params);
    if (filters.id !== undefined) {
      // Any id: an event's opens its page, else the record page of the kind that holds it; an id
      // of another account's is looked for in every account, and the page says which holds it.
      const here = await findId(sources, filters.id, account);
      if (here) return c.redirect(here.href);
      const elsewhere = await findInOtherAccounts(sources, filters.id, account, logger);
      const page = await sources.events.query({ ...logQueryOf({ range: "all" }, now()), account });
      const notice = <FoundElsewhere id={filters.id} account={account} found={elsewhere} />;
      return render(c, account, <EventsPage filters={filters} page={page} now={now()} notice={notice} />, elsewhere.length > 0 ? 200 : 404);
    }
    const page = await sources.events.query({ ...logQueryOf(filters, now()), account });
    return render(c, account, <EventsPage filters={filters} page={page} now={now()} />);
  });

  route.get("/events/:id", async (c) => {
    const { account } = pageQuery(c, []);
    const id = eventIdParam(c);
    const event = await sources.events.get(id, account);
    if (!event) return notFound(c, account, `No event ${printable(id)} in the log.`);
    return render(c, account, <EventPage event={event} changes={await sources.changesAfter(event, account)} now={now()} />);
  });

  route.get("/failures", async (c) => {
    const { account, params } = pageQuery(c, ["range"]);
    const at = now();
    const { range, since } = boundedRange(params.range, "24h", at);
    const [groups, sync] = await Promise.all([
      sources.failureGroups({ since }, account),
      sources.syncFailures?.(account).catch((err: unknown) => {
        logger.warn({ err }, "the console could not read the sync queue's failed jobs; the Failures page shows without them");
        return undefined;
      }),
    ]);
    return render(c, account, <FailuresPage groups={groups} sync={sync} range={range} since={since} now={at} />);
  });

  // The changes of one source: with `reconcile` (the default), those the health page counts as missed webhooks.
  route.get("/changes", async (c) => {
    const { account, params } = pageQuery(c, ["source", "range"]);
    const source = params.source ?? "reconcile";
    if (!(CHANGE_SOURCES as readonly string[]).includes(source))
      throw new MirrorFilterError("source", `source must be one of ${CHANGE_SOURCES.join(", ")}`);
    const at = now();
    const { range, since } = boundedRange(params.range, "1h", at);
    const changes = await sources.changesBySource({ source: source as ChangeSource, since }, account);
    return render(c, account, <ChangesPage changes={changes} source={source as ChangeSource} range={range} since={since} now={at} />);
  });

  route.get("/mirror", (c) =>
    c.redirect(hrefWith(`${CONSOLE_PATH}/mirror/${sources.mirror.kinds[0] ?? "orders"}`, {}, pageQuery(c).account)),
  );
  route.get("/mirror/:kind", async (c) => {
    const { account, params } = pageQuery(c);
    const kind = c.req.param("kind");
    if (!sources.mirror.kinds.includes(kind)) return notFound(c, account, asSentence(kindsAre("mirror", sources.mirror.kinds)));
    const filters = parseMirrorFilters(params);
    const page = await sources.mirror.list(kind, { ...filters, limit: String(MIRROR_PAGE_SIZE), account });
    const records = page.data as Record<string, unknown>[];
    const ids = records.map((r) => String(r.id));
    const times = await sources.mirror.bookkeeping(kind, ids, account);
    const rows = records.map((record) => ({ record, ...times.get(String(record.id)) }));
    return render(
      c,
      account,
      <MirrorPage kinds={sources.mirror.kinds} kind={kind} filters={filters} rows={rows} nextCursor={page.nextCursor} now={now()} />,
    );
  });

  route.get("/records/:kind/:id", async (c) => {
    const { account, params } = pageQuery(c, ["cursor"]);
    const { kind, id } = c.req.param();
    if (!sources.records.kinds.includes(kind)) return notFound(c, account, asSentence(kindsAre("record", sources.records.kinds)));
    const story = await sources.records.story(kind, id, params.cursor, account);
    if (!story) return notFound(c, account, asSentence(unknownRecord(kind, id)));
    return render(c, account, <RecordPage story={story} cursor={params.cursor} now={now()} />);
  });

  // Deployment-wide: `account` only keeps the page's links in the account the operator came from.
  route.get("/health", async (c) => {
    const at = now();
    const scope = await scopeOf(c, pageQuery(c).account);
    const [view, problems] = await Promise.all([sources.health(at), sources.openProblems?.().catch(() => undefined) ?? []]);
    const lead = <OpenProblems problems={problems} now={at} />;
    return html(c, scope, <HealthPage view={{ ...view, now: at }} accounts={scope.accounts} lead={lead} />);
  });
  route.get("/health.json", async (c) => c.json(await sources.summary()));

  // Neither lists the accounts: a page that failed may have failed on the database the list reads.
  const errorPage = (c: Context<AppEnv>, status: ContentfulStatusCode, message: string) => {
    const scope = { account: accountOrDefault(c), accounts: [], here: { path: `${CONSOLE_PATH}/events`, params: {} } };
    return html(c, scope, <ErrorPage status={status} message={message} />, status);
  };
  route.notFound((c) => errorPage(c, 404, `No console page at ${c.req.path.slice(0, 200)}.`));
  // Bad filters (400), a query past its time budget (503) and the rest, as a page rather than JSON.
  route.onError((err, c) => {
    const failure = toHttpFailure(err);
    if (failure.status >= 500 && failure.status !== 503) logger.error({ err }, "console page failed");
    return errorPage(c, failure.status, failure.body.error.message);
  });
  return route;
}

/** A page's `range` preset and the moment it starts; "all" reads as the longest preset: these pages offer no unbounded range. */
function boundedRange(text: string | undefined, fallback: RangePreset, at: Date): { range: RangePreset; since: Date } {
  const given = parseRangePreset(text, fallback);
  const range = given === "all" ? "7d" : given;
  return { range, since: presetSince(range, at) ?? at };
}

/** Where an id is in one account: its event's page, else the record page of the first kind holding it. */
async function findId(
  sources: ConsoleSources,
  id: string,
  account: string,
): Promise<{ account: string; href: string; what: string } | undefined> {
  const found = await sources.events.get(id, account);
  if (found) return { account, href: eventHref(found.id, account), what: `event (${printable(found.type)})` };
  const kind = (await sources.records.find(id, account))[0];
  if (kind !== undefined) return { account, href: recordHref(kind, id, undefined, account), what: `${kind} record` };
  return undefined;
}

/**
 * The id in every other account (default and the registered ones): event ids and record ids are
 * unique only within an account, so several may hold it. An account whose read fails is skipped
 * (logged): the page says what the others hold.
 */
async function findInOtherAccounts(sources: ConsoleSources, id: string, account: string, logger: Logger) {
  const listed = sources.accounts ? await sources.accounts().catch(() => []) : [];
  const others = [...new Set([DEFAULT_ACCOUNT, ...listed.map((a) => a.id)])].filter((a) => a !== account);
  const found = await Promise.all(
    others.map((other) =>
      findId(sources, id, other).catch((err: unknown) => {
        logger.warn({ err, account: other }, "the console's Find could not read an account; it names the accounts it could read");
        return undefined;
      }),
    ),
  );
  return found.filter((f) => f !== undefined);
}

/** What Find says when the page's account does not hold the id: which accounts do, with a link to each, or that none does. */
function FoundElsewhere(props: { id: string; account: string; found: { account: string; href: string; what: string }[] }) {
  const id = printable(props.id);
  if (props.found.length === 0)
    return <>{`No event, ${ANY_RECORD_NOUN} with id ${id} in any account: neither the event logs nor the mirrors know it.`}</>;
  return (
    <span data-testid="found-elsewhere">
      {`Account ${printable(props.account)} holds nothing with id ${id}; `}
      {props.found.map((f, i) => (
        <>
          {i > 0 ? "; " : ""}
          {`account ${printable(f.account)} holds it: `}
          <a href={f.href}>{f.what}</a>
        </>
      ))}
      .
    </span>
  );
}

/** The page's account when it is a good one, else default (an error page's links: the page may have failed on it). */
function accountOrDefault(c: Context<AppEnv>): string {
  try {
    return pageQuery(c).account;
  } catch {
    return DEFAULT_ACCOUNT;
  }
}

/**
 * A page's scope: its account, the registered accounts (read per page, so one added a moment ago is
 * offered) and where the switcher submits. When the list cannot be read the page still shows, with
 * a switcher holding default and the page's account only.
 */
function pageScopes(sources: ConsoleSources, logger: Logger) {
  const list = sources.accounts;
  return async (c: Context<AppEnv>, account: string): Promise<PageScope> => {
    const accounts = list
      ? await list().catch((err: unknown) => {
          logger.warn({ err }, "the console could not list the accounts; its switcher offers default and the page's account");
          return [];
        })
      : [];
    const { account: _, cursor: __, ...params } = c.req.query();
    return { account, accounts, here: { path: c.req.path, params } };
  };
}

/** A page that could not be shown: why, and the way back to the events (of the page's account). */
function ErrorPage(props: { status: ContentfulStatusCode; message: string }) {
  return (
    <Layout title={props.status >= 500 ? "Could not load this page" : "Not here"} section="events">
      <p class="notice">{props.message}</p>
      <p>
        <a href={hrefWith(`${CONSOLE_PATH}/events`)}>Back to the events</a>
      </p>
    </Layout>
  );
}
