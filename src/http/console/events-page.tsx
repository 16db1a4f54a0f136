import { printable } from "../../mirror/id-text.js";
import type { ConsoleEventSummary } from "./console-sources.js";
import { ConsoleFilterError } from "./console-filter-error.js";
import { CONSOLE_PATH, Layout, StatusPill, When } from "./layout.js";
import { parseRangePreset, presetSince, RANGE_LABELS, RANGE_PRESETS, refuseUnknown, type RangePreset } from "./time-range.js";

export const EVENTS_PAGE_SIZE = 50;
const KNOWN = ["id", "type", "status", "handler", "fingerprint", "range", "since", "until", "cursor"] as const;
const STATUSES = ["retrying", "failed", "handled"] as const;

/** The events page's filters as the operator typed them (empty fields dropped). */
export interface EventFilters {
  id?: string;
  type?: string;
  status?: string;
  handler?: string;
  /** A failure group's (failures page): the events on which `handler` failed with an error of this fingerprint. */
  fingerprint?: string;
  range: RangePreset;
  since?: string;
  until?: string;
  cursor?: string;
}

/** The page's query, strictly: unknown parameters and a bad status or range are 400s; the rest is checked by the log's own parser. */
export function parseEventFilters(params: Record<string, string>): EventFilters {
  refuseUnknown(params, KNOWN);
  const given = Object.fromEntries(
    Object.entries(params)
      .filter(([, v]) => v.trim() !== "")
      .map(([k, v]) => [k, v.trim()]),
  );
  if (given.status !== undefined && !(STATUSES as readonly string[]).includes(given.status))
    throw new ConsoleFilterError("status", `status must be one of ${STATUSES.join(", ")}`);
  if (given.range !== undefined && given.since !== undefined)
    throw new ConsoleFilterError("range", "give either a range preset or since, not both");
  return { ...given, range: parseRangePreset(given.range, "all") };
}

/** The event log query (GET /events's parameters) the filters stand for: newest first, `retrying` is the log's `received`. */
export function logQueryOf(filters: EventFilters, now: Date): Record<string, string> {
  const query: Record<string, string> = { order: "newest", limit: String(EVENTS_PAGE_SIZE) };
  const since = filters.since ?? presetSince(filters.range, now)?.toISOString();
  if (since !== undefined) query.since = since;
  if (filters.until !== undefined) query.until = filters.until;
  if (filters.type !== undefined) query.type = filters.type;
  if (filters.status !== undefined) query.status = filters.status === "retrying" ? "received" : filters.status;
  if (filters.handler !== undefined) query.handler = filters.handler;
  if (filters.fingerprint !== undefined) query.fingerprint = filters.fingerprint;
  if (filters.cursor !== undefined) query.cursor = filters.cursor;
  return query;
}

/** A link to the events page with these filters (and any overrides). */
export function eventsHref(filters: Partial<EventFilters>, overrides: Partial<EventFilters> = {}): string {
  const merged: Record<string, string | undefined> = { ...filters, ...overrides };
  if (merged.range === "all") delete merged.range;
  const params = new URLSearchParams(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ""));
  const text = params.toString();
  return `${CONSOLE_PATH}/events${text ? `?${text}` : ""}`;
}

export function EventsPage(props: {
  filters: EventFilters;
  page: { data: ConsoleEventSummary[]; nextCursor: string | null };
  notice?: string;
  now: Date;
}) {
  const { filters, page, now } = props;
  const base = { ...filters, cursor: undefined };
  return (
    <Layout title="Events" section="events">
      <form class="filters" method="get" action={`${CONSOLE_PATH}/events`}>
        <label>
          Type
          <input name="type" placeholder="order.* or order.created" value={filters.type ?? ""} />
        </label>
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
        <label>
          Handler
          <input name="handler" placeholder="order.created#0" value={filters.handler ?? ""} />
        </label>
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
        <label>
          Until (ISO 8601)
          <input name="until" placeholder="2026-11-24T06:00:00Z" value={filters.until ?? ""} />
        </label>
        <button type="submit" class="primary">
          Filter
        </button>
        <a href={`${CONSOLE_PATH}/events`}>clear</a>
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
      <div class="pager">
        {filters.cursor ? <a href={eventsHref(base)}>« newest</a> : null}
        {page.nextCursor ? <a href={eventsHref(base, { cursor: page.nextCursor })}>older »</a> : <span class="muted">end of the log</span>}
      </div>
    </Layout>
  );
}

function EventTable(props: { events: ConsoleEventSummary[]; now: Date }) {
  if (props.events.length === 0) return <p class="muted">No event matches.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th>Event</th>
          <th>Type</th>
          <th>Status</th>
          <th class="num">Attempts</th>
          <th>Handlers</th>
          <th>Received</th>
        </tr>
      </thead>
      <tbody>
        {props.events.map((e) => (
          <tr>
            <td class="mono">
              <a href={`${CONSOLE_PATH}/events/${encodeURIComponent(e.id)}`}>{printable(e.id)}</a>
            </td>
            <td class="mono">{printable(e.type)}</td>
            <td>
              <StatusPill status={e.status} />
            </td>
            <td class="num">{e.attempts}</td>
            <td>
              {Object.entries(e.handlers).map(([key, h]) => (
                <div>
                  <span class="mono">{printable(key)}</span> <span class={`status-${h.status}`}>{h.status}</span>
                  {h.error ? <span class="muted"> — {h.error}</span> : null}
                </div>
              ))}
            </td>
            <td>
              <When at={e.receivedAt} now={props.now} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
