import { createContext, useContext, type Child } from "hono/jsx";
import { raw } from "hono/html";
import { carriedAccount, DEFAULT_ACCOUNT } from "../../config/defaults.js";
import { shownStatus } from "../../mirror/values.js";
import { duration } from "../../base/duration.js";
import { printable } from "../../base/text.js";
import type { AccountSyncState } from "../../sync/first-import.js";
// A console page's query parameter that is unknown or malformed is the mirror's one invalid_filter: a 400 naming it, nothing read.
import { MirrorFilterError } from "../../mirror/errors.js";
import { CONSOLE_PATH, DASHBOARD_PATH, FAVICON_PATH, METRICS_PATH } from "../operator-routes.js";

// What every console page shares: the frame (nav, account switcher, search, the stylesheet and
// script it links), the account a page is of and the links that keep it, how times and statuses
// read, the time-range presets and the strict reading of a page's query.

export type ConsoleSection = "events" | "failures" | "mirror" | "health";

const SECTIONS: readonly { key: ConsoleSection; label: string; href: string }[] = [
  { key: "events", label: "Events", href: `${CONSOLE_PATH}/events` },
  { key: "failures", label: "Failures", href: `${CONSOLE_PATH}/failures` },
  { key: "mirror", label: "Mirror", href: `${CONSOLE_PATH}/mirror` },
  { key: "health", label: "Health", href: `${CONSOLE_PATH}/health` },
];

/** A registered account as `GET /accounts` lists it: its id and, when the list says it, where its sync stands. */
export interface ListedAccount {
  id: string;
  sync?: AccountSyncState | undefined;
}

/**
 * Which account a page is of, and what its header offers. The routes set it once per page
 * (console-routes.tsx); the switcher and every link (`hrefWith`) read it, so no page hands the
 * account down to each of its links.
 */
export interface PageScope {
  /** The account the page reads: `?account=` as accountParam checked it, `default` when none. */
  account: string;
  /** The registered accounts; none: the header has no switcher. */
  accounts: readonly ListedAccount[];
  /** Where the switcher submits: this page's path and its query but `account` and `cursor` (a cursor is of one account's list). */
  here: { path: string; params: Record<string, string> };
}

export const Scope = createContext<PageScope>({ account: DEFAULT_ACCOUNT, accounts: [], here: { path: CONSOLE_PATH, params: {} } });

/** The account of the page being rendered (only while one is). */
const pageAccount = (): string => useContext(Scope).account;

/**
 * The page frame: nav of the console's sections, the account switcher, links to the queue dashboard
 * and the metrics. The title and the heading name whose data the page shows (companies share
 * restaurant ids, so a page must say which company's it is): the page's account, or every account
 * for a page of the deployment (`deployment`: the health page).
 */
export function Layout(props: { title: string; section: ConsoleSection; deployment?: boolean; children?: Child }) {
  const account = pageAccount();
  const whose = props.deployment ? "every account" : `account ${printable(account)}`;
  return (
    <>
      {raw("<!doctype html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${props.title} · ${whose} · svc-webhooks console`}</title>
          <link rel="icon" type="image/svg+xml" href={FAVICON_PATH} />
          <link rel="stylesheet" href={`${CONSOLE_PATH}/assets/console.css`} />
          <script src={`${CONSOLE_PATH}/assets/console.js`} defer></script>
        </head>
        {/* The script's calls of the operator API name the page's account (data-account). */}
        <body data-account={carriedAccount(account)}>
          <header>
            <a class="brand" href={hrefWith(`${CONSOLE_PATH}/events`)}>
              svc-webhooks
            </a>
            <AccountSwitcher />
            {SECTIONS.map((s) => (
              <a href={hrefWith(s.href)} aria-current={s.key === props.section ? "page" : undefined}>
                {s.label}
              </a>
            ))}
            <form class="search" method="get" action={`${CONSOLE_PATH}/events`} role="search">
              <AccountField />
              <input name="id" aria-label="Find by id" placeholder="any id: evt_…, ord_…, bkg_…" size={26} />
              <button type="submit">Find</button>
            </form>
            <span class="right">
              <a href={DASHBOARD_PATH}>Queues (bull-board)</a>
              <a href={METRICS_PATH}>Metrics</a>
            </span>
          </header>
          <main>
            <h1>
              {props.title}{" "}
              <span class="whose" data-testid="whose">
                · {whose}
              </span>
            </h1>
            {props.children}
          </main>
        </body>
      </html>
    </>
  );
}

/**
 * The header's account switcher: a GET form to this page with `account`, there once an account is
 * registered, or when the page is of another account than default (one removed without purge keeps
 * its rows): the way back stays. The console script submits it on change; its button is for a
 * browser without the script.
 */
function AccountSwitcher() {
  const { account, accounts, here } = useContext(Scope);
  if (accounts.length === 0 && account === DEFAULT_ACCOUNT) return null;
  const listed = account === DEFAULT_ACCOUNT || accounts.some((a) => a.id === account);
  const choices: ListedAccount[] = [{ id: DEFAULT_ACCOUNT }, ...accounts, ...(listed ? [] : [{ id: account }])];
  return (
    <form class="accounts" method="get" action={here.path} data-account-switch="">
      {Object.entries(here.params).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <select name="account" aria-label="Account">
        {choices.map((a) => (
          <option value={a.id} selected={a.id === account}>
            {a.sync ? `${a.id} (${a.sync.state})` : a.id}
          </option>
        ))}
      </select>
      <button type="submit">Switch</button>
    </form>
  );
}

/** A GET form's account, hidden: filtering or finding stays in the page's account. */
export function AccountField() {
  const account = pageAccount();
  return account === DEFAULT_ACCOUNT ? null : <input type="hidden" name="account" value={account} />;
}

/**
 * A time as the operator reads it: UTC to the second, how long ago, and (filled by the console
 * script, which alone knows the viewer's zone) the local time; without the script, UTC and the age.
 */
export function When(props: { at: Date | string | null | undefined; now?: Date }) {
  if (props.at === null || props.at === undefined) return <span class="muted">never</span>;
  const at = typeof props.at === "string" ? new Date(props.at) : props.at;
  return (
    <time datetime={at.toISOString()} title={at.toISOString()}>
      {at.toISOString().replace("T", " ").slice(0, 19)}Z <span class="muted">({ago(at, props.now ?? new Date())})</span>
      <span class="muted" data-local></span>
    </time>
  );
}

/** How long ago `at` was, as `age` writes it. */
export function ago(at: Date, now: Date): string {
  return age((now.getTime() - at.getTime()) / 1000);
}

/**
 * Every age the console writes: "just now" within a second either way, "12 s ago", "5 min ago",
 * "3 h ago", "2 d ago"; a time still to come: "in 40 s".
 */
export function age(seconds: number): string {
  const s = Math.trunc(seconds);
  if (s === 0) return "just now";
  return s < 0 ? `in ${duration(-s)}` : `${duration(s)} ago`;
}

/** How long a handler ran: 840 ms, 2.4 s, then as `duration` does (5 min). */
export function runDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return duration(ms / 1000);
}

export function StatusPill(props: { status: string }) {
  const shown = shownStatus(props.status);
  return <span class={`pill status-${shown}`}>{shown}</span>;
}

/**
 * A table of rows (the children): its header row when it names `columns`; the columns named in
 * `num` are right-aligned, as their numbers are.
 */
export function Table(props: { columns?: readonly string[]; num?: readonly string[]; class?: string; testid?: string; children?: Child }) {
  return (
    <table class={props.class} data-testid={props.testid}>
      {props.columns ? (
        <thead>
          <tr>
            {props.columns.map((title) => (
              <th class={props.num?.includes(title) ? "num" : undefined}>{title}</th>
            ))}
          </tr>
        </thead>
      ) : null}
      <tbody>{props.children}</tbody>
    </table>
  );
}

/** Each handler's latest outcome, one line a handler, with its error. */
export function HandlerOutcomes(props: { handlers: Record<string, { status: string; error?: string }> }) {
  return (
    <>
      {Object.entries(props.handlers).map(([key, h]) => (
        <div>
          <span class="mono">{printable(key)}</span> <span class={`status-${h.status}`}>{h.status}</span>
          {h.error ? <span class="muted"> — {h.error}</span> : null}
        </div>
      ))}
    </>
  );
}

/**
 * The pager of a newest-first list (the events, a record's timeline): back to the newest page from
 * an older one, then the next older page, or `end` when nothing is older. `href` links a page by
 * its cursor (none: the newest).
 */
export function NewestFirstPager(props: {
  cursor: string | undefined;
  nextCursor: string | null | undefined;
  href: (cursor?: string) => string;
  end: string;
}) {
  return (
    <div class="pager">
      {props.cursor ? <a href={props.href()}>« newest</a> : null}
      {props.nextCursor ? <a href={props.href(props.nextCursor)}>older »</a> : <span class="muted">{props.end}</span>}
    </div>
  );
}

/** A filter form's text field under its label. */
export function Field(props: { label: string; name: string; placeholder: string; value: string | undefined }) {
  return (
    <label>
      {props.label}
      <input name={props.name} placeholder={props.placeholder} value={props.value ?? ""} />
    </label>
  );
}

/** The presets of every time filter in the console. */
export const RANGE_PRESETS = { "1h": 3600_000, "24h": 86_400_000, "7d": 604_800_000 } as const;
export type RangePreset = keyof typeof RANGE_PRESETS | "all";
export const RANGE_LABELS: Record<RangePreset, string> = { "1h": "last hour", "24h": "last 24 h", "7d": "last 7 d", all: "all time" };

/** A preset's name from a query parameter, strictly. */
export function parseRangePreset(text: string | undefined, fallback: RangePreset): RangePreset {
  if (text === undefined || text === "") return fallback;
  if (text === "all" || text in RANGE_PRESETS) return text as RangePreset;
  throw new MirrorFilterError("range", `range must be one of ${[...Object.keys(RANGE_PRESETS), "all"].join(", ")}`);
}

/** Where a preset starts (undefined: all time). */
export function presetSince(preset: RangePreset, now: Date): Date | undefined {
  return preset === "all" ? undefined : new Date(now.getTime() - RANGE_PRESETS[preset]);
}

/**
 * Refuses parameters a page does not know, so a typo is a 400 rather than an unfiltered page.
 * `params` come without `account`, which every page takes (console-routes.tsx reads it first).
 */
export function refuseUnknown(params: Record<string, string>, known: readonly string[]): void {
  for (const name of Object.keys(params))
    if (!known.includes(name))
      throw new MirrorFilterError(name, `unknown parameter ${name}; this page takes ${[...known, "account"].join(", ")}`);
}

/** A page's query parameters as the operator typed them: trimmed, empty fields dropped. */
export function givenParams(params: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(params)
      .filter(([, v]) => v.trim() !== "")
      .map(([k, v]) => [k, v.trim()]),
  );
}

/**
 * A console path with these query parameters (undefined and empty ones left out) and `account`
 * when it is not default: every link between the pages is built here, so each keeps the account.
 * The account is the rendered page's; a route's redirect, outside a render, passes its own.
 */
export function hrefWith(path: string, params: Record<string, string | undefined> = {}, account: string = pageAccount()): string {
  const all = { ...params, account: carriedAccount(account) };
  const text = new URLSearchParams(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== "")).toString();
  return `${path}${text ? `?${text}` : ""}`;
}

/**
 * One event's page; `account` as `hrefWith` takes it. Here rather than in event-pages.tsx: the
 * mirror's pages link events too, and event-pages imports them.
 */
export const eventHref = (id: string, account?: string) => hrefWith(`${CONSOLE_PATH}/events/${encodeURIComponent(id)}`, {}, account);

/** An event's id as the pages show it in a list (printable), linking to its page. */
export function EventLink(props: { id: string }) {
  return <a href={eventHref(props.id)}>{printable(props.id)}</a>;
}

/** A value as the pages show stored JSON: indented. */
export const json = (value: unknown) => JSON.stringify(value, null, 2);

/** The console's stylesheet (/console/assets/console.css): the system font stack, nothing from other hosts. */
export const CONSOLE_STYLE = `
:root { color-scheme: light; --fg: #1d232a; --muted: #5b6673; --line: #d9dee4; --bg: #f6f7f9; --ok: #17703a; --bad: #b3261e; --warn: #8a5a00; --link: #0b57d0; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
header { display: flex; gap: 18px; align-items: center; padding: 10px 20px; background: #1d232a; color: #fff; }
header a { color: #dfe6ee; } header a[aria-current="page"] { color: #fff; font-weight: 600; border-bottom: 2px solid #fff; }
header .brand { font-weight: 700; color: #fff; margin-right: 8px; } header .right { margin-left: auto; display: flex; gap: 14px; }
main { padding: 16px 20px 40px; max-width: 1280px; }
h1 { font-size: 20px; margin: 4px 0 12px; } h1 .whose { font-weight: normal; color: var(--muted); font-size: 16px; } h2 { font-size: 16px; margin: 22px 0 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f4; font-weight: 600; font-size: 13px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #fff; border: 1px solid var(--line); padding: 10px; overflow: auto; max-height: 420px; white-space: pre-wrap; word-break: break-all; }
form.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin-bottom: 12px; background: #fff; border: 1px solid var(--line); padding: 10px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 2px; }
input, select, button { font: inherit; padding: 4px 8px; border: 1px solid #aab4bf; border-radius: 4px; background: #fff; }
button { cursor: pointer; background: #eef1f4; } button.primary { background: #0b57d0; border-color: #0b57d0; color: #fff; }
button:disabled { opacity: 0.6; cursor: default; }
.presets { display: flex; gap: 8px; align-items: center; margin-bottom: 8px; font-size: 13px; }
.status-handled, .status-ok, .ok { color: var(--ok); } .status-failed, .bad { color: var(--bad); } .status-retrying { color: var(--warn); }
.pill { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; border: 1px solid currentColor; }
.muted { color: var(--muted); } .notice { padding: 8px 10px; background: #fff8e1; border: 1px solid #f0d48a; margin: 8px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); padding: 10px 12px; } .card h2 { margin-top: 0; }
dl.kv { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 14px; margin: 0; } dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; } time { white-space: nowrap; } td.mono { overflow-wrap: anywhere; } td.mono.type { overflow-wrap: break-word; }
.cards.wide { grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); }
.bulk { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; } progress { width: 160px; }
details summary { cursor: pointer; color: var(--link); }
.pager { margin-top: 10px; display: flex; gap: 12px; }
header form.search { display: flex; gap: 4px; } header form.search input { width: 16em; } header form.accounts { display: flex; gap: 4px; }
.level { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; font-weight: 600; border: 1px solid currentColor; cursor: help; }
.level-ok { color: var(--ok); background: #e8f4ec; } .level-warn { color: var(--warn); background: #fff4d6; } .level-bad { color: var(--bad); background: #fdecea; }
table.figures th { background: none; font-weight: normal; font-size: 14px; overflow-wrap: break-word; } .cards.figure-cards { grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); } .verdict { font-size: 15px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px; margin-bottom: 12px; } figure.chart { margin: 0; background: #fff; border: 1px solid var(--line); padding: 10px 12px; min-width: 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: 4px; } figure.chart > svg { width: 100%; height: auto; display: block; } figure.chart path { stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
figure.chart text { font-size: 11px; fill: var(--muted); } figure.chart line.axis { stroke: #aab4bf; } figure.chart line.grid { stroke: var(--line); stroke-dasharray: 3 3; }
section.handler { margin-bottom: 14px; } section.handler h3 { font-size: 14px; margin: 12px 0 6px; font-weight: 600; } td.attempt-number { white-space: nowrap; font-variant-numeric: tabular-nums; }
.error-text { overflow-wrap: anywhere; white-space: pre-wrap; }
table.attempts { table-layout: fixed; } table.attempts th:nth-child(1) { width: 5.5em; } table.attempts th:nth-child(2), table.attempts th:nth-child(6) { width: 20em; } table.attempts time { white-space: normal; } table.attempts time .muted { white-space: nowrap; } table.attempts th:nth-child(3) { width: 6.5em; } table.attempts th:nth-child(4) { width: 5.5em; }
ul.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12.5px; } svg.swatch { width: 10px; height: 10px; margin-right: 4px; }
`;

/**
 * The console's only script, served from this origin (/console/assets/console.js; the CSP allows
 * no inline script). It calls the operator API with the browser's own Basic credentials, each
 * call of the page's account (`?account=` from the body's data-account, none for default):
 * - `[data-replay-event]` buttons: POST /events/{id}/replay ({} or {"handler"}), then poll
 *   GET /events/{id} until the log counts a new attempt, and reload;
 * - `[data-bulk]` boxes: a dry run (POST /events/replay with dryRun) shows the count first; the
 *   second button runs it (with the count as "confirm") and polls GET /events/replays/{id} into
 *   a progress bar; while it runs, Stop cancels it (DELETE /events/replays/{id}).
 * - `[data-refresh-record]` buttons: POST /records/{kind}/{id}/refresh, then poll
 *   GET /records/{kind}/{id} until the mirror's copy was read after the time the page showed, and reload;
 * - `time[datetime] [data-local]` spans (`When`): the time in the viewer's zone, when it is not UTC;
 * - `form[data-account-switch]` (the header's switcher): submitted as soon as an account is picked;
 * Text from the server is set with textContent only, never as HTML.
 */
export const CONSOLE_SCRIPT = String.raw`"use strict";
(function () {
  var POLL_MS = 1000;
  var ACCOUNT = document.body.getAttribute("data-account");
  // An operator API path of the page's account, as the page's own reads were.
  function ofAccount(path) {
    return ACCOUNT ? path + "?account=" + encodeURIComponent(ACCOUNT) : path;
  }
  function say(el, text, failed) {
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("bad", Boolean(failed));
  }
  function call(method, path, body) {
    var init = { method: method, headers: { accept: "application/json" } };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var json = null;
        try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
        if (!res.ok) {
          var message = json && json.error && json.error.message ? json.error.message : "HTTP " + res.status;
          throw new Error(message);
        }
        return json;
      });
    });
  }
  // GET path until done(answer), then reload; what names the thing read in a failure.
  function pollUntil(path, done, status, what, reloading) {
    call("GET", path).then(function (answer) {
      if (done(answer)) {
        say(status, reloading);
        window.location.reload();
      } else setTimeout(function () { pollUntil(path, done, status, what, reloading); }, POLL_MS);
    }, function (err) { say(status, "Could not read the " + what + ": " + err.message, true); });
  }
  // Sends the request with the button disabled; a refusal enables it again and says so.
  function send(button, status, method, path, body, refused, then) {
    button.disabled = true;
    call(method, path, body).then(then, function (err) {
      button.disabled = false;
      say(status, refused + " refused: " + err.message, true);
    });
  }
  function replayOne(button) {
    var id = button.getAttribute("data-replay-event");
    var handler = button.getAttribute("data-handler");
    var before = Number(button.getAttribute("data-attempts") || "0");
    var status = document.getElementById("replay-status");
    say(status, "Replaying " + (handler ? "handler " + handler : "every handler") + "…");
    send(button, status, "POST", ofAccount("/events/" + encodeURIComponent(id) + "/replay"), handler ? { handler: handler } : {}, "Replay", function (answer) {
      var replay = answer && answer.replay ? answer.replay.id : "";
      say(status, "Replay " + replay + " queued; waiting for its attempt…");
      pollUntil(ofAccount("/events/" + encodeURIComponent(id)), function (event) {
        return event && event.attempts > before;
      }, status, "event", "New attempt recorded; reloading.");
    });
  }
  function refreshRecord(button) {
    var path = "/records/" + encodeURIComponent(button.getAttribute("data-refresh-record")) + "/" + encodeURIComponent(button.getAttribute("data-id"));
    var shownReadAt = button.getAttribute("data-read-at") || "";
    var status = document.getElementById("refresh-status");
    say(status, "Asking for a read…");
    send(button, status, "POST", ofAccount(path + "/refresh"), {}, "Refresh", function () {
      say(status, "Refresh requested; waiting for the read…");
      pollUntil(ofAccount(path), function (story) {
        var readAt = story && story.record ? story.record.readAt : "";
        return readAt && readAt !== shownReadAt;
      }, status, "record", "Read from the API; reloading.");
    });
  }
  function pollReplay(box, id) {
    var bar = box.querySelector("progress");
    var status = box.querySelector("[data-bulk-status]");
    call("GET", "/events/replays/" + encodeURIComponent(id)).then(function (r) {
      if (bar) { bar.max = Math.max(1, r.total); bar.value = r.done + r.failed; bar.hidden = false; }
      var stop = box.querySelector("[data-bulk-stop]");
      if (stop) { stop.hidden = r.state !== "running"; stop.setAttribute("data-bulk-id", r.id); }
      say(status, "Replay " + r.id + ": " + r.done + " done, " + r.failed + " failed of " + r.total + " (" + r.state + ")", r.failed > 0);
      if (r.state === "running") setTimeout(function () { pollReplay(box, id); }, POLL_MS);
    }, function (err) { say(status, "Could not read the replay: " + err.message, true); });
  }
  function stopBulk(box, button) {
    var status = box.querySelector("[data-bulk-status]");
    send(button, status, "DELETE", "/events/replays/" + encodeURIComponent(button.getAttribute("data-bulk-id") || ""), undefined, "Stop", function (r) {
      say(status, "Replay " + r.id + " " + r.state + ": " + r.withdrawn + " not run, " + r.done + " done, " + r.failed + " failed.");
    });
  }
  function bulk(box, dryRun) {
    var filter = JSON.parse(box.getAttribute("data-bulk") || "{}");
    var status = box.querySelector("[data-bulk-status]");
    var run = box.querySelector("[data-bulk-run]");
    var count = box.querySelector("[data-bulk-count]");
    if (dryRun) {
      say(status, "Counting…");
      call("POST", ofAccount("/events/replay"), { filter: filter, dryRun: true }).then(function (answer) {
        say(status, "Will replay " + answer.count + " event" + (answer.count === 1 ? "" : "s") + ".");
        if (run) { run.hidden = answer.count === 0; run.textContent = "Replay " + answer.count + " now"; }
        box.setAttribute("data-bulk-counted", String(answer.count));
      }, function (err) { say(status, "Dry run refused: " + err.message, true); });
      return;
    }
    if (run) run.disabled = true;
    if (count) count.disabled = true;
    say(status, "Starting…");
    // The count the operator saw: the API refuses the replay if the filter matches another by now.
    call("POST", ofAccount("/events/replay"), { filter: filter, confirm: Number(box.getAttribute("data-bulk-counted")) }).then(function (answer) {
      say(status, "Replay " + answer.id + " started for " + answer.count + " events.");
      pollReplay(box, answer.id);
    }, function (err) {
      if (run) run.disabled = false;
      if (count) count.disabled = false;
      say(status, "Replay refused: " + err.message, true);
    });
  }
  // The server renders UTC; only the browser knows the viewer's zone: "2026-11-27 17:30:05 local (UTC+05:30)".
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  Array.prototype.forEach.call(document.querySelectorAll("time[datetime] [data-local]"), function (span) {
    var at = new Date(span.parentElement.getAttribute("datetime"));
    var offset = -at.getTimezoneOffset();
    if (isNaN(at.getTime()) || offset === 0) return;
    var zone = "UTC" + (offset < 0 ? "-" : "+") + pad(Math.floor(Math.abs(offset) / 60)) + ":" + pad(Math.abs(offset) % 60);
    span.textContent = " · " + at.getFullYear() + "-" + pad(at.getMonth() + 1) + "-" + pad(at.getDate()) + " " +
      pad(at.getHours()) + ":" + pad(at.getMinutes()) + ":" + pad(at.getSeconds()) + " local (" + zone + ")";
  });
  // Picking an account is the choice; the switcher's button stays for a browser without this script.
  Array.prototype.forEach.call(document.querySelectorAll("form[data-account-switch]"), function (form) {
    var button = form.querySelector("button");
    if (button) button.hidden = true;
    form.addEventListener("change", function () { form.submit(); });
  });
  document.addEventListener("click", function (e) {
    var target = e.target instanceof Element ? e.target.closest("button") : null;
    if (!target) return;
    if (target.hasAttribute("data-replay-event")) return replayOne(target);
    if (target.hasAttribute("data-refresh-record")) return refreshRecord(target);
    var box = target.closest("[data-bulk]");
    if (box && target.hasAttribute("data-bulk-count")) return bulk(box, true);
    if (box && target.hasAttribute("data-bulk-run")) return bulk(box, false);
    if (box && target.hasAttribute("data-bulk-stop")) return stopBulk(box, target);
  });
})();
`;
