import { isMirrorKind, MIRROR_KINDS, recordNoun } from "../../mirror/kinds.js";
import { printable, shortened } from "../../base/text.js";
import type { RecordBookkeeping } from "../../mirror/mirror-store.js";
import type { RecordStory } from "../../mirror/record-story.js";
import { CONSOLE_PATH } from "../operator-routes.js";
import {
  AccountField,
  eventHref,
  EventLink,
  Field,
  givenParams,
  HandlerOutcomes,
  Table,
  hrefWith,
  json,
  Layout,
  NewestFirstPager,
  refuseUnknown,
  StatusPill,
  When,
} from "./layout.js";

// The mirror's pages: a kind's records, and one record's story (its copy, a refresh, its timeline).

export const MIRROR_PAGE_SIZE = 50;
const KNOWN = ["restaurantId", "status", "cursor"] as const;

/** The mirror page's filters, one field a known parameter. */
export type MirrorFilters = Partial<Record<(typeof KNOWN)[number], string>>;

/** The mirror page's query, strictly (values are checked by the mirror's own filter parser). */
export function parseMirrorFilters(params: Record<string, string>): MirrorFilters {
  refuseUnknown(params, KNOWN);
  return givenParams(params);
}

/** A listed record and, when the mirror keeps it, when it was read and written. */
type MirrorRow = { record: Record<string, unknown> } & Partial<RecordBookkeeping>;

const text = (v: unknown) => (typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : "");

/** The few fields that tell records of a kind apart at a glance. */
function gist(kind: string, r: Record<string, unknown>): string {
  if (kind === "orders") return `${text(r.type)} · ${text(r.total)} ${text(r.currency)}`;
  if (kind === "bookings") return `${text(r.date)} ${text(r.time)} · party of ${text(r.partySize)}`;
  if (kind === "menu-items") return `${text(r.name)} · ${text(r.price)}${r.stock === undefined ? "" : ` · stock ${text(r.stock)}`}`;
  return "";
}

const mirrorHref = (kind: string, filters: MirrorFilters) => hrefWith(`${CONSOLE_PATH}/mirror/${kind}`, filters);

export function MirrorPage(props: {
  kinds: readonly string[];
  kind: string;
  filters: MirrorFilters;
  rows: MirrorRow[];
  nextCursor: string | null;
  now: Date;
}) {
  const { kind, filters, now } = props;
  const base = { ...filters, cursor: undefined };
  return (
    <Layout title={`Mirror: ${kind}`} section="mirror">
      <div class="presets">{props.kinds.map((k) => (k === kind ? <strong>{k}</strong> : <a href={mirrorHref(k, base)}>{k}</a>))}</div>
      <form class="filters" method="get" action={`${CONSOLE_PATH}/mirror/${kind}`}>
        <Field label="Restaurant" name="restaurantId" placeholder="rest_…" value={filters.restaurantId} />
        {kind === "orders" || kind === "bookings" ? (
          <Field label="Status" name="status" placeholder="CONFIRMED" value={filters.status} />
        ) : null}
        <AccountField />
        <button type="submit" class="primary">
          Filter
        </button>
        <a href={mirrorHref(kind, {})}>clear</a>
      </form>
      {props.rows.length === 0 ? (
        <p class="muted">No record matches.</p>
      ) : (
        <Table columns={["Id", "Restaurant", "Status", "Summary", "Last read from the API", "Last written here"]}>
          {props.rows.map(({ record, readAt, syncedAt }) => (
            <tr>
              <td class="mono">
                <a href={recordHref(kind, text(record.id))}>{printable(text(record.id))}</a>
                <details>
                  <summary>as stored</summary>
                  <pre>{json(record)}</pre>
                </details>
              </td>
              <td class="mono">{text(record.restaurantId)}</td>
              <td>{text(record.status)}</td>
              <td>{gist(kind, record)}</td>
              <td>
                <When at={readAt} now={now} />
              </td>
              <td>
                <When at={syncedAt} now={now} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <div class="pager">
        {filters.cursor ? <a href={mirrorHref(kind, base)}>« first page</a> : null}
        {props.nextCursor ? <a href={mirrorHref(kind, { ...base, cursor: props.nextCursor })}>next »</a> : null}
      </div>
    </Layout>
  );
}

/** A field's value on one line: strings as they are, anything else as JSON (cut, the record's JSON has it whole). */
const shown = (value: unknown) => shortened(typeof value === "string" ? value : JSON.stringify(value), 160);

const NOUNS = MIRROR_KINDS.map(recordNoun);
/** A record of any kind, in words: "order, booking, menu item or review". */
export const ANY_RECORD_NOUN = `${NOUNS.slice(0, -1).join(", ")} or ${NOUNS.at(-1) ?? ""}`;

/** A record named with its kind ("order ord_123"), linking to its story. */
export function RecordLink(props: { kind: string; id: string }) {
  return (
    <a href={recordHref(props.kind, props.id)}>
      {isMirrorKind(props.kind) ? recordNoun(props.kind) : printable(props.kind)} <span class="mono">{printable(props.id)}</span>
    </a>
  );
}

/** A record's page; `account`: a route's redirect names it, a page's link keeps the page's. */
export const recordHref = (kind: string, id: string, cursor?: string, account?: string) =>
  hrefWith(`${CONSOLE_PATH}/records/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`, { cursor }, account);

/** A record's story: the mirror's copy and when it was read, a "refresh now" button, then every event that named it, newest first. */
export function RecordPage(props: { story: RecordStory; cursor?: string | undefined; now: Date }) {
  const { story, now } = props;
  const copy = story.record;
  return (
    <Layout title={`${story.kind} ${printable(story.id)}`} section="mirror">
      {story.rejected ? (
        <p class="notice">
          The mirror refused this record as last read ({story.rejected.reason}: {story.rejected.detail}), {story.rejected.count} time
          {story.rejected.count === 1 ? "" : "s"}, last <When at={story.rejected.lastSeen} now={now} />.
        </p>
      ) : null}
      {story.unlisted ? (
        <p class="notice">
          A refresh gave up looking for it in the API's lists <When at={story.unlisted.givenUpAt} now={now} /> after{" "}
          {story.unlisted.attempts} rounds.
        </p>
      ) : null}
      <div class="cards wide">
        <div class="card">
          <h2>In the mirror</h2>
          {copy ? (
            <dl class="kv">
              <dt>status</dt>
              <dd data-testid="record-status">{shown(copy.data.status ?? "—")}</dd>
              <dt>restaurant</dt>
              <dd class="mono">{story.restaurantId ?? "—"}</dd>
              <dt>last read from the API</dt>
              <dd data-testid="read-at">
                <When at={copy.readAt} now={now} />
              </dd>
              <dt>last written here</dt>
              <dd>
                <When at={copy.syncedAt} now={now} />
              </dd>
              <dt>last changed by</dt>
              <dd>
                {copy.lastChange ? (
                  <>
                    a <strong>{copy.lastChange.source}</strong> read,{" "}
                    <a href={eventHref(copy.lastChange.eventId)}>
                      <When at={copy.lastChange.at} now={now} />
                    </a>
                  </>
                ) : (
                  <span class="muted">no change event in the log</span>
                )}
              </dd>
            </dl>
          ) : (
            <p class="muted">The mirror holds no copy of this record (never read, or refused).</p>
          )}
          {copy ? (
            <details>
              <summary>the record as stored</summary>
              <pre>{json(copy.data)}</pre>
            </details>
          ) : null}
        </div>
        <div class="card">
          <h2>Refresh</h2>
          <p class="muted">Asks the workers to read this record from the API now, as an event naming it would.</p>
          <p>
            <button
              type="button"
              class="primary"
              data-refresh-record={story.kind}
              data-id={story.id}
              data-read-at={copy ? copy.readAt.toISOString() : ""}
            >
              Refresh now
            </button>
          </p>
          <p id="refresh-status" role="status"></p>
        </div>
      </div>
      <h2>Timeline</h2>
      <p class="muted">
        Every event the log holds that named this record, newest first: deliveries from the API and the changes the mirror recorded (with
        the fields they changed).
      </p>
      <Timeline entries={story.timeline} now={now} />
      <NewestFirstPager
        cursor={props.cursor}
        nextCursor={story.nextCursor}
        href={(cursor) => recordHref(story.kind, story.id, cursor)}
        end="nothing older"
      />
    </Layout>
  );
}

function Timeline(props: { entries: RecordStory["timeline"]; now: Date }) {
  if (props.entries.length === 0) return <p class="muted">No event in the log names this record.</p>;
  return (
    <Table testid="timeline" columns={["When", "What", "Event", "Status", "Handlers", "Changed"]}>
      {props.entries.map((e) => (
        <tr>
          <td>
            <When at={e.at} now={props.now} />
          </td>
          <td class="mono">{e.entry === "change" ? `${printable(e.type)} (${e.source ?? ""} read)` : printable(e.type)}</td>
          <td class="mono">
            {/* A change no handler received is its record's history: no event page to link to. */}
            {e.event === false ? <span class="muted">no handler: not an event</span> : <EventLink id={e.eventId} />}
          </td>
          <td>{e.event === false ? null : <StatusPill status={e.status} />}</td>
          <td>
            <HandlerOutcomes handlers={e.handlers} />
          </td>
          <td>
            <Diff diff={e.diff ?? []} created={e.created === true} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** A change's fields, before → after; a creation's fields as created; a long list folded. */
function Diff(props: { diff: NonNullable<RecordStory["timeline"][number]["diff"]>; created: boolean }) {
  const lines = props.diff.map((d) => (
    <div>
      <span class="mono">{d.field}</span>: {props.created ? null : <span class="muted">{shown(d.before)}</span>}
      {props.created ? null : " → "}
      {shown(d.after)}
    </div>
  ));
  if (props.created && lines.length === 0) return <div class="muted">imported</div>;
  const label = props.created ? `created with ${lines.length} field${lines.length === 1 ? "" : "s"}` : `${lines.length} fields changed`;
  if (lines.length <= 4)
    return (
      <>
        {props.created ? <div class="muted">{label}</div> : null}
        {lines}
      </>
    );
  return (
    <details>
      <summary>{label}</summary>
      {lines}
    </details>
  );
}
