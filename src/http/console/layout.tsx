import type { Child } from "hono/jsx";
import { raw } from "hono/html";
import { DASHBOARD_PATH, FAVICON_PATH } from "../operator-routes.js";

export const CONSOLE_PATH = "/console";
export type ConsoleSection = "events" | "failures" | "mirror" | "health";

const SECTIONS: readonly { key: ConsoleSection; label: string; href: string }[] = [
  { key: "events", label: "Events", href: `${CONSOLE_PATH}/events` },
  { key: "failures", label: "Failures", href: `${CONSOLE_PATH}/failures` },
  { key: "mirror", label: "Mirror", href: `${CONSOLE_PATH}/mirror` },
  { key: "health", label: "Health", href: `${CONSOLE_PATH}/health` },
];

/** The page frame: nav of the console's sections, links to the queue dashboard and the metrics. */
export function Layout(props: { title: string; section: ConsoleSection; children?: Child }) {
  return (
    <>
      {raw("<!doctype html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${props.title} · svc-webhooks console`}</title>
          <link rel="icon" type="image/svg+xml" href={FAVICON_PATH} />
          <link rel="stylesheet" href={`${CONSOLE_PATH}/assets/console.css`} />
          <script src={`${CONSOLE_PATH}/assets/console.js`} defer></script>
        </head>
        <body>
          <header>
            <a class="brand" href={`${CONSOLE_PATH}/events`}>
              svc-webhooks
            </a>
            {SECTIONS.map((s) => (
              <a href={s.href} aria-current={s.key === props.section ? "page" : undefined}>
                {s.label}
              </a>
            ))}
            <form class="search" method="get" action={`${CONSOLE_PATH}/events`} role="search">
              <input name="id" aria-label="Find by id" placeholder="any id: evt_…, ord_…, bkg_…" size={26} />
              <button type="submit">Find</button>
            </form>
            <span class="right">
              <a href={DASHBOARD_PATH}>Queues (bull-board)</a>
              <a href="/metrics">Metrics</a>
            </span>
          </header>
          <main>
            <h1>{props.title}</h1>
            {props.children}
          </main>
        </body>
      </html>
    </>
  );
}

/** A time as the operator reads it: UTC to the second, and how long ago. */
export function When(props: { at: Date | string | null | undefined; now?: Date }) {
  if (props.at === null || props.at === undefined) return <span class="muted">never</span>;
  const at = typeof props.at === "string" ? new Date(props.at) : props.at;
  return (
    <time datetime={at.toISOString()} title={at.toISOString()}>
      {at.toISOString().replace("T", " ").slice(0, 19)}Z <span class="muted">({ago(at, props.now ?? new Date())})</span>
    </time>
  );
}

/** "12 s ago", "5 min ago", "3 h ago", "2 d ago"; a time still to come: "in 40 s". */
export function ago(at: Date, now: Date): string {
  const seconds = (now.getTime() - at.getTime()) / 1000;
  return seconds < 0 ? `in ${duration(-seconds)}` : `${duration(seconds)} ago`;
}

/** Seconds as the largest sensible unit: 12 s, 5 min, 3 h, 2 d. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** How long a handler ran: 840 ms, 2.4 s, then as `duration` does (5 min). */
export function runDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return duration(ms / 1000);
}

/** The log says `received` for an event whose last attempt failed and will be retried: shown as retrying. */
export const shownStatus = (status: string) => (status === "received" ? "retrying" : status);

export function StatusPill(props: { status: string }) {
  const shown = shownStatus(props.status);
  return <span class={`pill status-${shown}`}>{shown}</span>;
}
