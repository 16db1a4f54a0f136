import type { OpsSummary } from "../../metrics/ops-summary.js";
import { DASHBOARD_PATH } from "../dashboard.js";
import { CONSOLE_PATH, duration, Layout, When } from "./layout.js";

const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");

/** Freshness, budget, backlog, missed webhooks, reconciliation and failed counts: the summary as one screen. */
export function HealthPage(props: { summary: OpsSummary; now: Date }) {
  const { summary: s, now } = props;
  const missed = s.missedWebhooks.reduce((n, v) => n + v.value, 0);
  return (
    <Layout title="Health" section="health">
      <p class="muted">
        As of <When at={s.at} now={now} /> · the same numbers as <a href="/metrics">/metrics</a>, as JSON at{" "}
        <a href={`${CONSOLE_PATH}/health.json`}>{`${CONSOLE_PATH}/health.json`}</a>
      </p>
      <div class="cards">
        <section class="card" data-testid="freshness">
          <h2>Mirror freshness</h2>
          <table>
            <tbody>
              {s.freshness.map((f) => (
                <tr>
                  <td>{f.kind}</td>
                  <td>
                    {f.lastWriteAgeSeconds === null ? (
                      <span class="muted">never written</span>
                    ) : (
                      `last write ${duration(f.lastWriteAgeSeconds)} ago`
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
        <section class="card" data-testid="rate-budget">
          <h2>API rate budget</h2>
          {s.rateBudget ? (
            <dl class="kv">
              <dt>used</dt>
              <dd>
                {s.rateBudget.used} of {s.rateBudget.max} per window
              </dd>
              <dt>left</dt>
              <dd class={s.rateBudget.left === 0 ? "bad" : "ok"}>{s.rateBudget.left}</dd>
              <dt>Retry-After pause</dt>
              <dd>{s.rateBudget.pausedSeconds > 0 ? `${duration(s.rateBudget.pausedSeconds)} left` : "none"}</dd>
            </dl>
          ) : (
            <p class="muted">No upstream client in this process (no API_BASE_URL, or ROLE=web).</p>
          )}
        </section>
        <section class="card" data-testid="ingest">
          <h2>Ingest</h2>
          <dl class="kv">
            <dt>backlog</dt>
            <dd>{s.ingest.backlog ?? "unknown"} events not yet settled</dd>
            <dt>lag</dt>
            <dd>{s.ingest.lagSeconds === null ? "unknown" : `oldest waiting ${duration(s.ingest.lagSeconds)}`}</dd>
            <dt>database</dt>
            <dd class={s.database.up === false ? "bad" : "ok"}>{s.database.up === null ? "unknown" : s.database.up ? "up" : "down"}</dd>
          </dl>
        </section>
        <section class="card" data-testid="reconciliation">
          <h2>Reconciliation</h2>
          <dl class="kv">
            <dt>last sweep finished</dt>
            <dd>
              <When at={s.reconciliation.lastSuccessAt} now={now} />
            </dd>
            <dt>missed webhooks</dt>
            <dd>
              {missed} since this process started
              {s.missedWebhooks.map((v) => (
                <div class="muted">
                  {labelsText(v.labels)}: {v.value}
                </div>
              ))}
            </dd>
          </dl>
          <h2>Progress</h2>
          {s.reconciliation.progress.length === 0 ? (
            <p class="muted">No sweep progress exported by this version.</p>
          ) : (
            <table>
              <tbody>
                {s.reconciliation.progress.flatMap((m) =>
                  m.values.map((v) => (
                    <tr>
                      <td class="mono" title={m.help}>
                        {m.name} {labelsText(v.labels)}
                      </td>
                      <td class="num">{v.value}</td>
                    </tr>
                  )),
                )}
              </tbody>
            </table>
          )}
        </section>
        <section class="card" data-testid="queues">
          <h2>Queues</h2>
          <table>
            <thead>
              <tr>
                <th>Queue</th>
                <th class="num">Failed</th>
                <th class="num">Delayed</th>
                <th class="num">Waiting</th>
                <th class="num">Active</th>
              </tr>
            </thead>
            <tbody>
              {s.queues.map((q) => (
                <tr>
                  <td>
                    <a href={`${DASHBOARD_PATH}/queue/${encodeURIComponent(q.queue)}`}>{q.queue}</a>
                  </td>
                  <td class={`num${(q.counts.failed ?? 0) > 0 ? " bad" : ""}`}>{q.counts.failed ?? 0}</td>
                  <td class="num">{q.counts.delayed ?? 0}</td>
                  <td class="num">{q.counts.waiting ?? 0}</td>
                  <td class="num">{q.counts.active ?? 0}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </div>
    </Layout>
  );
}
