import { printable } from "../../mirror/id-text.js";
import type { ConsoleRecordStory, ConsoleTimelineEntry } from "./console-sources.js";
import { CONSOLE_PATH, Layout, StatusPill, When } from "./layout.js";

const json = (value: unknown) => JSON.stringify(value, null, 2);
/** A field's value on one line: strings as they are, anything else as JSON (cut, the record's JSON has it whole). */
const shown = (value: unknown) => {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

export const recordHref = (kind: string, id: string, cursor?: string) =>
  `${CONSOLE_PATH}/records/${encodeURIComponent(kind)}/${encodeURIComponent(id)}${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`;

/** A record's story: the mirror's copy and when it was read, a "refresh now" button, then every event that named it, newest first. */
export function RecordPage(props: { story: ConsoleRecordStory; cursor?: string | undefined; now: Date }) {
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
                    <a href={`${CONSOLE_PATH}/events/${encodeURIComponent(copy.lastChange.eventId)}`}>
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
      <div class="pager">
        {props.cursor ? <a href={recordHref(story.kind, story.id)}>« newest</a> : null}
        {story.nextCursor ? (
          <a href={recordHref(story.kind, story.id, story.nextCursor)}>older »</a>
        ) : (
          <span class="muted">nothing older</span>
        )}
      </div>
    </Layout>
  );
}

function Timeline(props: { entries: ConsoleTimelineEntry[]; now: Date }) {
  if (props.entries.length === 0) return <p class="muted">No event in the log names this record.</p>;
  return (
    <table data-testid="timeline">
      <thead>
        <tr>
          <th>When</th>
          <th>What</th>
          <th>Event</th>
          <th>Status</th>
          <th>Handlers</th>
          <th>Changed</th>
        </tr>
      </thead>
      <tbody>
        {props.entries.map((e) => (
          <tr>
            <td>
              <When at={e.at} now={props.now} />
            </td>
            <td class="mono">{e.entry === "change" ? `${printable(e.type)} (${e.source ?? ""} read)` : printable(e.type)}</td>
            <td class="mono">
              <a href={`${CONSOLE_PATH}/events/${encodeURIComponent(e.eventId)}`}>{printable(e.eventId)}</a>
            </td>
            <td>
              <StatusPill status={e.status} />
            </td>
            <td>
              {Object.entries(e.handlers).map(([key, h]) => (
                <div>
                  <span class="mono">{key}</span> <span class={`status-${h.status}`}>{h.status}</span>
                  {h.error ? <span class="muted"> — {h.error}</span> : null}
                </div>
              ))}
            </td>
            <td>
              <Diff diff={e.diff ?? []} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A change's fields, before → after; a long list (a record's first read names every field) folded. */
function Diff(props: { diff: NonNullable<ConsoleTimelineEntry["diff"]> }) {
  const lines = props.diff.map((d) => (
    <div>
      <span class="mono">{d.field}</span>: <span class="muted">{shown(d.before)}</span> → {shown(d.after)}
    </div>
  ));
  if (lines.length <= 4) return <>{lines}</>;
  const firstRead = props.diff.every((d) => d.before === null);
  return (
    <details>
      <summary>{firstRead ? `first read: ${lines.length} fields` : `${lines.length} fields changed`}</summary>
      {lines}
    </details>
  );
}
