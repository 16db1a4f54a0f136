import { printable } from "../../mirror/id-text.js";
import type { ConsoleFailureGroup } from "./console-sources.js";
import { eventsHref } from "./events-page.js";
import { CONSOLE_PATH, Layout, shownStatus, When } from "./layout.js";
import { RANGE_LABELS, RANGE_PRESETS, type RangePreset } from "./time-range.js";

/**
 * The bulk replay filter (POST /events/replay) and event list of a group: its handler, status and
 * fingerprint over the page's range (no fingerprint for a group of outcomes logged before
 * fingerprints were stored: the filter could not select them).
 */
function groupFilter(group: ConsoleFailureGroup, since: Date): Record<string, string> {
  const filter = { status: shownStatus(group.status), handler: group.handler, since: since.toISOString() };
  return group.fingerprinted ? { ...filter, fingerprint: group.fingerprint } : filter;
}

/** A box that counts (dry run) before it replays, then shows the replay's progress and can stop it (console-script.ts). */
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

export function FailuresPage(props: { groups: ConsoleFailureGroup[]; range: RangePreset; since: Date; now: Date }) {
  const { groups, since, now } = props;
  const total = groups.reduce((n, g) => n + g.events, 0);
  return (
    <Layout title="Failures" section="failures">
      <div class="presets">
        <span class="muted">Received in the</span>
        {(Object.keys(RANGE_PRESETS) as RangePreset[]).map((r) =>
          r === props.range ? <strong>{RANGE_LABELS[r]}</strong> : <a href={`${CONSOLE_PATH}/failures?range=${r}`}>{RANGE_LABELS[r]}</a>,
        )}
        <span class="muted">
          · since <When at={since} now={now} />
        </span>
      </div>
      <p>
        {groups.length === 0
          ? "Nothing failed or is retrying in this range."
          : `${total} failed handler outcome${total === 1 ? "" : "s"} in ${groups.length} group${groups.length === 1 ? "" : "s"}, by handler and error fingerprint (the first line with ids, numbers, times and hex masked; retrying: the last attempt failed and the queue will try again; failed: given up on).`}
      </p>
      {groups.length > 0 ? (
        <>
          <BulkReplay filter={{ status: "failed", since: since.toISOString() }} label="Count every failed event in range…" />
          <h2>By handler and error fingerprint</h2>
          <table>
            <thead>
              <tr>
                <th>Handler</th>
                <th>Error</th>
                <th>Status</th>
                <th class="num">Events</th>
                <th>Latest</th>
                <th>Replay</th>
              </tr>
            </thead>
            <tbody>
              {groups.map((g) => (
                <tr>
                  <td class="mono">{printable(g.handler)}</td>
                  <td>
                    <span class="bad mono" data-testid="fingerprint">
                      {g.fingerprint || "(no message)"}
                    </span>
                    <div class="muted">e.g. {g.error || "(no message)"}</div>
                    <div>
                      <a href={`${CONSOLE_PATH}/events/${encodeURIComponent(g.sampleId)}`}>newest event, with its stack</a>
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
            </tbody>
          </table>
        </>
      ) : null}
    </Layout>
  );
}
