import { printable } from "../../mirror/id-text.js";
import type { ConsoleEvent, ConsoleHandlerAttempt, ConsoleHandlerOutcome } from "./console-sources.js";
import { runDuration, When } from "./layout.js";

/** An error longer than this shows its first characters, the whole (bounded) text one click away. */
const ERROR_PREVIEW_CHARS = 240;

/**
 * Each handler of an event: its latest outcome, then one row per attempt (#: "n of N" in its run,
 * and which replay for a replay's, started, duration, outcome, error, next retry), oldest first,
 * and the latest failure's stack.
 */
export function HandlerAttempts(props: { event: ConsoleEvent; now: Date }) {
  const rows = props.event.handlerAttempts ?? [];
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

function HandlerSection(props: { handler: string; latest: ConsoleHandlerOutcome | undefined; rows: ConsoleHandlerAttempt[]; now: Date }) {
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
        <table class="attempts">
          <thead>
            <tr>
              <th>#</th>
              <th>Started</th>
              <th class="num">Duration</th>
              <th>Outcome</th>
              <th>Error</th>
              <th>Next retry</th>
            </tr>
          </thead>
          <tbody>
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
                  {r.nextRetryAt ? (
                    <When at={r.nextRetryAt} now={now} />
                  ) : (
                    <span class="muted">{r.outcome === "failed" ? "none" : "—"}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
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
  // Never half of a surrogate pair.
  const end = /[\ud800-\udbff]/.test(props.text.charAt(ERROR_PREVIEW_CHARS - 1)) ? ERROR_PREVIEW_CHARS - 1 : ERROR_PREVIEW_CHARS;
  return (
    <details>
      <summary>{props.text.slice(0, end)}…</summary>
      <pre>{props.text}</pre>
    </details>
  );
}
