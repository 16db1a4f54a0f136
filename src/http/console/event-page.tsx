import { printable } from "../../mirror/id-text.js";
import type { ConsoleChange, ConsoleEvent } from "./console-sources.js";
import { CONSOLE_PATH, Layout, StatusPill, When } from "./layout.js";
import { HandlerAttempts } from "./handler-attempts.js";
import { recordHref } from "./record-page.js";

const json = (value: unknown) => JSON.stringify(value, null, 2);
/** A change event's kind → the record page's kind (the mirror's names). */
const RECORD_KIND_OF_CHANGE: Readonly<Record<string, string>> = { order: "orders", booking: "bookings", menu_item: "menu-items" };

/** One event: its envelope and payload, each handler's attempts with errors and stack, its steps, the changes after it, replay buttons. */
export function EventPage(props: { event: ConsoleEvent; changes: ConsoleChange[]; now: Date }) {
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
              <a href={`${CONSOLE_PATH}/events?type=${encodeURIComponent(event.type)}`}>{printable(event.type)}</a>
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
      {event.steps && event.steps.length > 0 ? (
        <>
          <h2>Durable steps</h2>
          <pre>{json(event.steps)}</pre>
        </>
      ) : null}
      <h2>Changes that followed</h2>
      <ChangeTable changes={props.changes} now={now} />
      <h2>Payload</h2>
      <pre data-testid="payload">{json(event.payload)}</pre>
    </Layout>
  );
}

function ChangeTable(props: { changes: ConsoleChange[]; now: Date }) {
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
      <table>
        <thead>
          <tr>
            <th>Change</th>
            <th>Record</th>
            <th>Source</th>
            <th>Changed fields</th>
            <th>Recorded</th>
          </tr>
        </thead>
        <tbody>
          {props.changes.map((c) => (
            <tr>
              <td class="mono">
                <a href={`${CONSOLE_PATH}/events/${encodeURIComponent(c.id)}`}>{printable(c.id)}</a>
              </td>
              <td class="mono">
                {c.kind} <a href={recordHref(RECORD_KIND_OF_CHANGE[c.kind] ?? c.kind, c.recordId)}>{printable(c.recordId)}</a>
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
        </tbody>
      </table>
    </>
  );
}
