import type { Child } from "hono/jsx";
import {
  type EventPage as LogPage,
  type EventSummary,
  type FailureGroup,
  type HandlerAttempt,
  REPLAY_FILTER_FIELDS,
} from "../../mirror/event-log.js";
import { shownStatus } from "../../mirror/values.js";
import { printable, shortened } from "../../base/text.js";
import { CHANGE_LIST_LIMIT, type CausedChange } from "../../mirror/record-story.js";
import type { ChangeSource } from "../../events/catalog.js";
import type { HandlerOutcome } from "../../mirror/database.js";
import type { EventDetail } from "../../mirror/storage.js";
// A console page's query parameter that is unknown or malformed is the mirror's one invalid_filter: a 400 naming it, nothing read.
import { MirrorFilterError } from "../../mirror/errors.js";
import { mirrorKindOfChange } from "../../mirror/kinds.js";
import type { FailedJob } from "../../queue/failed-jobs.js";
import { CONSOLE_PATH, DASHBOARD_PATH } from "../operator-routes.js";
import {
  AccountField,
  eventHref,
  EventLink,
  Field,
  givenParams,
  HandlerOutcomes,
  hrefWith,
  json,
  Layout,
  NewestFirstPager,
  parseRangePreset,
  presetSince,
  RANGE_LABELS,
  RANGE_PRESETS,
  refuseUnknown,
  runDuration,
  StatusPill,
  Table,
  When,
  type RangePreset,
} from "./layout.js";
import { RecordLink, recordHref } from "./mirror-pages.js";

// The event log's pages: the filtered list, one event (its handlers' attempts, its steps, the
// changes after it) and the failures grouped by handler and error fingerprint. They show the
// mirror's own types (import type: no query of the mirror runs here) and filter by the log's own
// filter names.

const EVENTS_PAGE_SIZE = 50;
// The log's filters a bulk replay takes (the page hands them to one), the page's own `id`, `range` and `cursor`.
const KNOWN = ["id", ...REPLAY_FILTER_FIELDS, "range", "cursor"] as const;
const STATUSES = ["retrying", "failed", "handled"] as const;

/**
 * The events page's filters as the operator typed them (empty fields dropped), one field a known
 * parameter. `fingerprint` (a failure group's, from the failures page): the events on which
 * `handler` failed with an error of this fingerprint.
 */
export type EventFilters = Partial<Record<Exclude<(typeof KNOWN)[number], "range">, string>> & { range: RangePreset };

/** The page's query, strictly: unknown parameters and a bad status or range are 400s; the rest is checked by the log's own parser. */
export function parseEventFilters(params: Record<string, string>): EventFilters {
  refuseUnknown(params, KNOWN);
  const given = givenParams(params);
  if (given.status !== undefined && !(STATUSES as readonly string[]).includes(given.status))
    throw new MirrorFilterError("status", `status must be one of ${STATUSES.join(", ")}`);
  if (given.range !== undefined && given.since !== undefined)
    throw new MirrorFilterError("range", "give either a range preset or since, not both");
  return { ...given, range: parseRangePreset(given.range, "all") };
}

/**
 * The event log query (GET /events's parameters) the filters stand for: newest first; `retrying`
 * passes as it is, which GET /events reads as the log's `received` (eventQueryFromParams).
 */
export function logQueryOf(filters: EventFilters, now: Date): Record<string, string> {
  const query: Record<string, string> = { order: "newest", limit: String(EVENTS_PAGE_SIZE) };
  const since = filters.since ?? presetSince(filters.range, now)?.toISOString();
  for (const name of [...REPLAY_FILTER_FIELDS, "cursor"] as const) {
    const value = name === "since" ? since : filters[name];
    if (value !== undefined) query[name] = value;
  }
  return query;
}

/** A link to the events page with these filters (and any overrides). */
function eventsHref(filters: Partial<EventFilters>, overrides: Partial<EventFilters> = {}): string {
  const merged: Record<string, string | undefined> = { ...filters, ...overrides };
  if (merged.range === "all") delete merged.range;
  return hrefWith(`${CONSOLE_PATH}/events`, merged);
}

export function EventsPage(props: { filters: EventFilters; page: LogPage; notice?: Child; now: Date }) {
  const { filters, page, now } = props;
  const base = { ...filters, cursor: undefined };
  return (
    <Layout title="Events" section="events">
      <form class="filters" method="get" action={`${CONSOLE_PATH}/events`}>
        <Field label="Type" name="type" placeholder="order.* or order.created" value={filters.type} />
        <label>
          Status
          <select name="status">
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option value={s} selected={filters.status === s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <Field label="Handler" name="handler" placeholder="order.created#0" value={filters.handler} />
        <label>
          Received
          <select name="range">
            {(["all", ...Object.keys(RANGE_PRESETS)] as RangePreset[]).map((r) => (
              <option value={r} selected={filters.range === r && filters.since === undefined}>
                {RANGE_LABELS[r]}
              </option>
            ))}
          </select>
        </label>
        <Field label="Until (ISO 8601)" name="until" placeholder="2026-11-24T06:00:00Z" value={filters.until} />
        <AccountField />
        <button type="submit" class="primary">
          Filter
        </button>
        <a href={hrefWith(`${CONSOLE_PATH}/events`)}>clear</a>
      </form>
      <div class="presets">
        <span class="muted">Received in the</span>
        {(Object.keys(RANGE_PRESETS) as RangePreset[]).map((r) => (
          <a href={eventsHref(base, { range: r, since: undefined })}>{RANGE_LABELS[r]}</a>
        ))}
        <span class="muted">· newest first</span>
      </div>
      {filters.fingerprint ? (
        <p class="notice">
          Only events on which <span class="mono">{printable(filters.handler ?? "")}</span> failed with an error of fingerprint{" "}
          <span class="mono">{filters.fingerprint}</span>.
        </p>
      ) : null}
      {props.notice ? <p class="notice">{props.notice}</p> : null}
      <EventTable events={page.data} now={now} />
      <NewestFirstPager
        cursor={filters.cursor}
        nextCursor={page.nextCursor}
        href={(cursor) => eventsHref(base, { cursor })}
        end="end of the log"
      />
    </Layout>
  );
}

function EventTable(props: { events: EventSummary[]; now: Date }) {
  if (props.events.length === 0) return <p class="muted">No event matches.</p>;
  return (
    <Table columns={["Event", "Type", "Record", "Status", "Attempts", "Handlers", "Received"]} num={["Attempts"]}>
      {props.events.map((e) => (
        <tr>
          <td class="mono">
            <EventLink id={e.id} />
          </td>
          <td class="mono type">{printable(e.type)}</td>
          <td>{e.record ? <RecordLink kind={e.record.kind} id={e.record.id} /> : <span class="muted">none</span>}</td>
          <td>
            <StatusPill status={e.status} />
          </td>
          <td class="num">{e.attempts}</td>
          <td>
            <HandlerOutcomes handlers={e.handlers} />
          </td>
          <td>
            <When at={e.receivedAt} now={props.now} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** One event: its envelope and payload, each handler's attempts with errors and stack, its steps, the changes after it, replay buttons. */
export function EventPage(props: { event: EventDetail; changes: CausedChange[]; now: Date }) {
  const { event, now } = props;
  const handlers = Object.entries(event.handlers);
  return (
    <Layout title={`Event ${printable(event.id)}`} section="events">
      <div class="cards wide">
        <div class="card">
          <h2>Envelope</h2>
          <dl class="kv">
            <dt>id</dt>
            <dd class="mono">{printable(event.id)}</dd>
            <dt>type</dt>
            <dd class="mono">
              <a href={eventsHref({ type: event.type })}>{printable(event.type)}</a>
            </dd>
            <dt>status</dt>
            <dd>
              <StatusPill status={event.status} />
            </dd>
            <dt>received</dt>
            <dd>
              <When at={event.receivedAt} now={now} />
            </dd>
            <dt>attempts</dt>
            <dd data-testid="attempts">{event.attempts}</dd>
            <dt>last attempt ended</dt>
            <dd>
              <When at={event.updatedAt} now={now} />
            </dd>
          </dl>
        </div>
        <div class="card">
          <h2>Replay</h2>
          <p class="muted">Runs the event again through the queue; the new attempt shows here when it ends.</p>
          <p>
            <button type="button" class="primary" data-replay-event={event.id} data-attempts={String(event.attempts)}>
              Replay all handlers
            </button>
          </p>
          {handlers.map(([key]) => (
            <p>
              <button type="button" data-replay-event={event.id} data-handler={key} data-attempts={String(event.attempts)}>
                Replay only {printable(key)}
              </button>
            </p>
          ))}
          <p id="replay-status" role="status"></p>
        </div>
      </div>
      <h2>Handlers</h2>
      <HandlerAttempts event={event} now={now} />
      {event.steps.length > 0 ? (
        <>
          <h2>Durable steps</h2>
          <StepTable steps={event.steps} now={now} />
        </>
      ) : null}
      <h2>Changes that followed</h2>
      <ChangeTable changes={props.changes} now={now} />
      <h2>Payload</h2>
      <pre data-testid="payload">{json(event.payload)}</pre>
    </Layout>
  );
}

function ChangeTable(props: { changes: CausedChange[]; now: Date }) {
  if (props.changes.length === 0)
    return (
      <p class="muted">
        No change event recorded for the record this event names since it was received (the refresh found nothing new, or it has not run
        yet).
      </p>
    );
  return (
    <>
      <p class="muted">
        Change events for the record named in the payload's <code>data.id</code>, recorded at or after this event was received (by record
        and time: a later event or sweep touching the same record shows here too; <em>source</em> says which kind of read wrote it).
      </p>
      <ChangeRows changes={props.changes} now={props.now} />
    </>
  );
}

/** A page's range presets (no unbounded one), the one in force in bold, and the moment it starts. */
function BoundedRanges(props: { lead: string; href: (range: RangePreset) => string; range: RangePreset; since: Date; now: Date }) {
  return (
    <div class="presets">
      <span class="muted">{props.lead}</span>
      {(Object.keys(RANGE_PRESETS) as RangePreset[]).map((r) =>
        r === props.range ? <strong>{RANGE_LABELS[r]}</strong> : <a href={props.href(r)}>{RANGE_LABELS[r]}</a>,
      )}
      <span class="muted">
        · since <When at={props.since} now={props.now} />
      </span>
    </div>
  );
}

/** What each source of a change says: the kind of read that wrote it. */
const SOURCE_WORDS: Record<ChangeSource, string> = {
  reconcile: "found by a reconciliation sweep, announced by no webhook (missed webhooks)",
  webhook: "written by a refresh a webhook asked for",
  backfill: "written by a first import or a backfill",
};

/**
 * The account's changes of one source, newest first: with `reconcile`, what the health page's
 * "missed webhooks" counts, each linking to its record's story.
 */
export function ChangesPage(props: { changes: CausedChange[]; source: ChangeSource; range: RangePreset; since: Date; now: Date }) {
  const { changes, source, since, now } = props;
  return (
    <Layout title={source === "reconcile" ? "Missed webhooks" : `Changes: ${source}`} section="health">
      <BoundedRanges
        lead="Recorded in the"
        href={(r) => hrefWith(`${CONSOLE_PATH}/changes`, { source, range: r })}
        range={props.range}
        since={since}
        now={now}
      />
      <p data-testid="changes-summary">
        {changes.length === 0
          ? `No change ${SOURCE_WORDS[source]} in this range.`
          : `${changes.length === CHANGE_LIST_LIMIT ? `The newest ${CHANGE_LIST_LIMIT}` : changes.length} change${changes.length === 1 ? "" : "s"} ${SOURCE_WORDS[source]}, newest first. The health page counts every account's; this list is this account's.`}
      </p>
      {changes.length > 0 ? <ChangeRows changes={changes} now={now} /> : null}
    </Layout>
  );
}

function ChangeRows(props: { changes: CausedChange[]; now: Date }) {
  return (
    <Table columns={["Change", "Record", "Source", "Changed fields", "Recorded"]}>
      {props.changes.map((c) => (
        <tr>
          <td class="mono">
            {c.event ? (
              <EventLink id={c.id} />
            ) : (
              <span title="no handler received it: its record's history, not an event">{printable(c.id)}</span>
            )}
          </td>
          <td class="mono">
            {c.kind} <a href={recordHref(mirrorKindOfChange(c.kind) ?? c.kind, c.recordId)}>{printable(c.recordId)}</a>
          </td>
          <td>{c.source}</td>
          <td>
            <span class="mono">{c.changed.join(", ")}</span>
            <details>
              <summary>before / after</summary>
              <pre>{json({ before: c.before, after: c.after })}</pre>
            </details>
          </td>
          <td>
            <When at={c.receivedAt} now={props.now} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** An event's durable steps (ctx.step), one row a step in the order they started, as `events show` lists them. */
function StepTable(props: { steps: EventDetail["steps"]; now: Date }) {
  return (
    <Table
      testid="steps"
      columns={["Handler", "Step", "Status", "Runs", "Attempt", "Started", "Took", "Result", "Error"]}
      num={["Runs", "Attempt", "Took", "Result"]}
    >
      {props.steps.map((s) => (
        <tr data-step={s.name}>
          <td class="mono">{printable(s.handler)}</td>
          <td class="mono">{printable(s.name)}</td>
          <td class={`status-${s.status}`}>{s.status}</td>
          <td class="num">{s.runs}</td>
          <td class="num">{s.attempt}</td>
          <td>
            <When at={s.startedAt} now={props.now} />
          </td>
          <td class="num">{s.durationMs === null ? <span class="muted">—</span> : runDuration(s.durationMs)}</td>
          <td class="num">{s.resultBytes === null ? <span class="muted">—</span> : `${s.resultBytes} B`}</td>
          <td class="error-text">{s.error === null ? <span class="muted">—</span> : <ErrorText text={s.error} />}</td>
        </tr>
      ))}
    </Table>
  );
}

/** An error longer than this shows its first characters, the whole (bounded) text one click away. */
const ERROR_PREVIEW_CHARS = 240;

/**
 * Each handler of an event: its latest outcome, then one row per attempt (#: "n of N" in its run,
 * and which replay for a replay's, started, duration, outcome, error, next retry), oldest first,
 * and the latest failure's stack.
 */
function HandlerAttempts(props: { event: EventDetail; now: Date }) {
  const rows = props.event.handlerAttempts;
  const keys = [...new Set([...Object.keys(props.event.handlers), ...rows.map((r) => r.handler)])];
  if (keys.length === 0) return <p class="muted">No handler outcome recorded (no handler is registered for this type).</p>;
  return (
    <div class="handlers" data-testid="handlers">
      {keys.map((handler) => (
        <HandlerSection
          handler={handler}
          latest={props.event.handlers[handler]}
          rows={rows.filter((r) => r.handler === handler)}
          now={props.now}
        />
      ))}
    </div>
  );
}

function HandlerSection(props: { handler: string; latest: HandlerOutcome | undefined; rows: HandlerAttempt[]; now: Date }) {
  const { handler, latest, rows, now } = props;
  // Attempts the log counted but keeps no row of: beyond the kept latest ones, or recorded before rows were kept.
  const unlisted = Math.max(0, (latest?.attempts ?? 0) - rows.length);
  return (
    <section class="handler" data-handler-attempts={handler}>
      <h3>
        <span class="mono">{printable(handler)}</span>{" "}
        {latest ? <span class={`pill status-${latest.status}`}>latest: {latest.status}</span> : null}
      </h3>
      {rows.length > 0 ? (
        <Table class="attempts" columns={["#", "Started", "Duration", "Outcome", "Error", "Next retry"]} num={["Duration"]}>
          {rows.map((r) => (
            <tr data-attempt={String(r.attempt)}>
              <td class="attempt-number">{r.replay > 0 ? `${r.attempt} of ${r.of} (replay ${r.replay})` : `${r.attempt} of ${r.of}`}</td>
              <td>
                <When at={r.startedAt} now={now} />
              </td>
              <td class="num">{runDuration(r.durationMs)}</td>
              <td class={`status-${r.outcome}`}>{r.outcome}</td>
              <td class="error-text">{r.error === null ? <span class="muted">—</span> : <ErrorText text={r.error} />}</td>
              <td>
                {r.nextRetryAt ? <When at={r.nextRetryAt} now={now} /> : <span class="muted">{r.outcome === "failed" ? "none" : "—"}</span>}
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
      {rows.length === 0 && latest?.error !== undefined ? (
        <p class="error-text">
          <ErrorText text={latest.error} />
        </p>
      ) : null}
      {unlisted > 0 ? (
        <p class="muted">
          {unlisted} earlier attempt{unlisted === 1 ? "" : "s"} of this handler {unlisted === 1 ? "is" : "are"} counted but not listed: the
          log keeps each handler's latest attempts, and none recorded before it kept them.
        </p>
      ) : null}
      {latest?.status === "failed" && latest.stack ? (
        <details>
          <summary>stack</summary>
          <pre>{latest.stack}</pre>
        </details>
      ) : null}
    </section>
  );
}

/** A handler's error as it threw it (bounded by the log): whole when short, else its start and the rest behind a click. */
function ErrorText(props: { text: string }) {
  if (props.text.length <= ERROR_PREVIEW_CHARS) return <>{props.text}</>;
  // Cut as `shortened` cuts (never half of a surrogate pair), marked with "…".
  return (
    <details>
      <summary>{shortened(props.text, ERROR_PREVIEW_CHARS)}</summary>
      <pre>{props.text}</pre>
    </details>
  );
}

/**
 * The bulk replay filter (POST /events/replay) and event list of a group: its handler, status and
 * fingerprint over the page's range (no fingerprint for a group of outcomes logged before
 * fingerprints were stored: the filter could not select them).
 */
function groupFilter(group: FailureGroup, since: Date): Record<string, string> {
  const filter = { status: shownStatus(group.status), handler: group.handler, since: since.toISOString() };
  return group.fingerprinted ? { ...filter, fingerprint: group.fingerprint } : filter;
}

/** A box that counts (dry run) before it replays, then shows the replay's progress and can stop it (the console script, layout.tsx). */
function BulkReplay(props: { filter: Record<string, string>; label: string }) {
  return (
    <div class="bulk" data-bulk={JSON.stringify(props.filter)}>
      <button type="button" data-bulk-count>
        {props.label}
      </button>
      <button type="button" class="primary" data-bulk-run hidden>
        Replay
      </button>
      <button type="button" data-bulk-stop hidden>
        Stop
      </button>
      <progress hidden></progress>
      <span data-bulk-status role="status"></span>
    </div>
  );
}

/** The sync queue's failed jobs of the page's account, as the Failures page shows them (listFailedJobs). */
export interface SyncFailures {
  jobs: FailedJob[];
  /** The failed set holds more jobs than were read: some of the account's may not be listed. */
  more: boolean;
}

export function FailuresPage(props: {
  groups: FailureGroup[];
  /** Undefined: the console has no sync queue to read (no upstream API), or Redis did not answer. */
  sync: SyncFailures | undefined;
  range: RangePreset;
  since: Date;
  now: Date;
}) {
  const { groups, since, now } = props;
  const total = groups.reduce((n, g) => n + g.events, 0);
  return (
    <Layout title="Failures" section="failures">
      <BoundedRanges
        lead="Received in the"
        href={(r) => hrefWith(`${CONSOLE_PATH}/failures`, { range: r })}
        range={props.range}
        since={since}
        now={now}
      />
      <p>
        {groups.length === 0
          ? "Nothing failed or is retrying in this range."
          : `${total} failed handler outcome${total === 1 ? "" : "s"} in ${groups.length} group${groups.length === 1 ? "" : "s"}, by handler and error fingerprint (the first line with ids, numbers, times and hex masked; retrying: the last attempt failed and the queue will try again; failed: given up on).`}
      </p>
      {groups.length > 0 ? (
        <>
          <BulkReplay filter={{ status: "failed", since: since.toISOString() }} label="Count every failed event in range…" />
          <h2>By handler and error fingerprint</h2>
          <Table columns={["Handler", "Error", "Status", "Events", "Latest", "Replay"]} num={["Events"]}>
            {groups.map((g) => (
              <tr>
                <td class="mono">{printable(g.handler)}</td>
                <td>
                  <span class="bad mono" data-testid="fingerprint">
                    {g.fingerprint || "(no message)"}
                  </span>
                  <div class="muted">e.g. {g.error || "(no message)"}</div>
                  <div>
                    <a href={eventHref(g.sampleId)}>newest event, with its stack</a>
                  </div>
                </td>
                <td class={`status-${shownStatus(g.status)}`}>{shownStatus(g.status)}</td>
                <td class="num">
                  <a href={eventsHref(groupFilter(g, since))}>{g.events}</a>
                </td>
                <td>
                  <When at={g.lastAt} now={now} />
                </td>
                <td>
                  <BulkReplay filter={groupFilter(g, since)} label="Count…" />
                </td>
              </tr>
            ))}
          </Table>
        </>
      ) : null}
      <SyncFailureTable sync={props.sync} now={now} />
    </Layout>
  );
}

/**
 * The sync jobs given up on (refreshes, reconciliation passes, backfills whose reads of the API
 * failed for good): whose, which job and kind, why, and how to run each again. They are kept for
 * KEEP_FAILED_SECONDS whatever the page's range (the failed set is the queue's, not the log's).
 */
function SyncFailureTable(props: { sync: SyncFailures | undefined; now: Date }) {
  const { sync, now } = props;
  return (
    <section data-testid="sync-failures">
      <h2>Sync jobs given up</h2>
      {sync === undefined ? (
        <p class="muted">The sync queue could not be read (no upstream API is configured, or Redis did not answer).</p>
      ) : sync.jobs.length === 0 ? (
        <p>No sync job of this account was given up{sync.more ? " among the newest failed jobs kept" : ""}.</p>
      ) : (
        <>
          <p>
            {sync.jobs.length} sync job{sync.jobs.length === 1 ? "" : "s"} of this account given up
            {sync.more ? " among the newest failed jobs kept" : ""}, newest first. Replay one from its page in the queue dashboard (Retry)
            or with the command beside it.
          </p>
          <Table columns={["Job", "Kind", "Cause", "Attempts", "Failed", "Replay"]} num={["Attempts"]}>
            {sync.jobs.map((j) => (
              <tr data-sync-job={j.job}>
                <td class="mono">{printable(j.name)}</td>
                <td class="mono">{j.kind === undefined ? <span class="muted">—</span> : printable(j.kind)}</td>
                <td class="bad error-text">{j.reason === "" ? "(no message)" : <ErrorText text={j.reason} />}</td>
                <td class="num">{j.attempts}</td>
                <td>
                  <When at={j.failedAt} now={now} />
                </td>
                <td>
                  <a href={`${DASHBOARD_PATH}/queue/${encodeURIComponent(j.queue)}/${encodeURIComponent(j.job)}`}>job {printable(j.job)}</a>
                  <div class="mono muted">
                    svc-webhooks replay {printable(j.job)} --queue {printable(j.queue)}
                  </div>
                </td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  );
}
