// The operator reads for people: `events show ID` and `records show KIND ID`, the event page and
// the record page of the console told as sentences (--json: the document GET /events/{id} and
// GET /records/{kind}/{id} answer). They read where replay acts: the service at --url, else the
// stores the environment names (the running service's embedded server, when it holds DATA_DIR).
import type * as z from "zod";
import { loadConfig } from "../config/config.js";
import { EventDetail as EventAnswer, recordStory } from "../http/operator-schemas.js";
import { MIRROR_KINDS, type MirrorKind } from "../mirror/kinds.js";
import type { RecordStory } from "../mirror/record-story.js";
import { type EventDetail, readEventDetail, readStory } from "../mirror/storage.js";
import { shownStatus } from "../mirror/values.js";
import { cutAt, printable, shortened } from "../base/text.js";
import { accountParam } from "../mirror/accounts.js";
import { accountQuery, carriedAccount } from "../config/defaults.js";
import type { StepRecord } from "../mirror/step-store.js";
import {
  type Answer,
  answer,
  type Command,
  CommandError,
  didYouMean,
  flagOptions,
  parseFlags,
  plural,
  textTable,
  UsageError,
} from "./command.js";
import { openEventStores, operatorClient } from "./operator.js";

/**
 * One operator read of an account's (`--account`, default's without it): GET `path` at --url, else
 * `local` on that account's stores opened here. Undefined from a store means nothing is known of it.
 */
async function read<T, A>(
  where: { url: string | undefined; env: NodeJS.ProcessEnv; account: string },
  path: string,
  /** The answer's schema at --url (the operator API's: times as strings). */
  remote: z.ZodType<A>,
  local: (stores: Awaited<ReturnType<typeof openEventStores>>) => Promise<T | undefined>,
  notFound: string,
): Promise<T | A> {
  if (where.url !== undefined) return operatorClient(where.url, where.env).call("GET", `${path}${accountQuery(where.account)}`, remote);
  const stores = await openEventStores(loadConfig({ ...where.env, ROLE: "worker" }));
  try {
    const found = await local(stores.forAccount(where.account));
    if (found === undefined) throw new CommandError(`${notFound}${ofAccount(where.account)}`, "not_found");
    return found;
  } finally {
    await stores.close();
  }
}

/** " of account X" for another account than default's: where a read looked. */
const ofAccount = (account: string) => {
  const carried = carriedAccount(account);
  return carried === undefined ? "" : ` of account ${printable(carried)}`;
};

/** A time as the API sends it (an ISO string) or the store gives it (a Date): ISO 8601, UTC. */
const at = (time: Date | string | null | undefined) => (time ? new Date(time).toISOString() : "never");

/** A value of a field diff or a record, short: JSON, at most 80 characters. */
const short = (value: unknown) => shortened(printable(JSON.stringify(value ?? null)), 79);

/** An error's first line, bounded. */
const firstLine = (error: string | null | undefined) => printable(cutAt((error ?? "").split("\n")[0] ?? "", 200));

/** The event page as lines: envelope, then each handler's latest outcome and attempts, then steps. */
export function sayEvent(event: EventDetail | z.infer<typeof EventAnswer>): string {
  const lines = [
    `event ${printable(event.id)} (${printable(event.type)}), received ${at(event.receivedAt)}: ${shownStatus(event.status)} after ${plural(event.attempts, "attempt")}, the last ended ${at(event.updatedAt)}`,
  ];
  const keys = [...new Set([...Object.keys(event.handlers), ...event.handlerAttempts.map((a) => a.handler)])];
  if (keys.length === 0) lines.push("no handler outcome recorded (no handler is registered for this type)");
  for (const key of keys) {
    const latest = event.handlers[key];
    lines.push(
      `handler ${printable(key)}: ${latest ? `${latest.status} (${plural(latest.attempts, "attempt")})${latest.error ? `: ${firstLine(latest.error)}` : ""}` : "no outcome yet"}`,
    );
    for (const a of event.handlerAttempts.filter((r) => r.handler === key))
      lines.push(
        `  ${a.replay > 0 ? `replay ${a.replay}, ` : ""}attempt ${a.attempt} of ${a.of} at ${at(a.startedAt)}, ${a.durationMs} ms: ${a.outcome}` +
          (a.error ? `: ${firstLine(a.error)}` : "") +
          (a.nextRetryAt ? `; next retry ${at(a.nextRetryAt)}` : ""),
      );
  }
  if (event.steps.length > 0) lines.push(`${plural(event.steps.length, "durable step")}:`, ...stepTable(event.steps));
  return lines.join("\n");
}

/** A time of day to the millisecond (a step's start: the steps of one event share their date). */
const clock = (time: Date | string) => new Date(time).toISOString().slice(11, 23);

/** A step as the table shows it, from the log (Date) or from the API (its JSON: a string). */
type ShownStep = Pick<StepRecord, "handler" | "name" | "status" | "runs" | "attempt" | "durationMs" | "resultBytes" | "error"> & {
  startedAt: Date | string;
};
/** An event's durable steps as a table, one row a step, as the console's event page shows them. */
export function stepTable(steps: readonly ShownStep[]): string[] {
  const rows = steps.map((s) => [
    printable(s.handler),
    printable(s.name),
    s.status,
    String(s.runs),
    String(s.attempt),
    clock(s.startedAt),
    s.durationMs === null ? "-" : `${s.durationMs} ms`,
    s.resultBytes === null ? "-" : `${s.resultBytes} B`,
    s.error === null ? "" : firstLine(s.error),
  ]);
  return textTable(["handler", "step", "status", "runs", "attempt", "started", "took", "result", "error"], rows).map((l) => `  ${l}`);
}

/** The record page as lines: the mirror's copy and what the log says of it, newest first. */
export function sayStory(story: RecordStory | z.infer<ReturnType<typeof recordStory>>): string {
  const record = story.record;
  const lines = [
    `${story.kind} ${printable(story.id)}${story.restaurantId ? ` of restaurant ${printable(story.restaurantId)}` : ""}: ` +
      (record
        ? `in the mirror, read ${at(record.readAt)}, written ${at(record.syncedAt)}` +
          (record.lastChange
            ? `; last changed by ${printable(record.lastChange.eventId)} (${printable(record.lastChange.source)}) at ${at(record.lastChange.at)}`
            : "")
        : "not in the mirror"),
  ];
  if (story.rejected)
    lines.push(
      `refused by the mirror ${plural(story.rejected.count, "time")} (${story.rejected.reason}: ${firstLine(story.rejected.detail)}), last ${at(story.rejected.lastSeen)}`,
    );
  if (story.unlisted)
    lines.push(
      `not found in the API's lists after ${plural(story.unlisted.attempts, "try", "tries")}; given up ${at(story.unlisted.givenUpAt)}`,
    );
  lines.push(
    story.timeline.length === 0
      ? "the log holds no event that named it"
      : `the log holds ${plural(story.timeline.length, "event")} that named it, newest first:`,
  );
  for (const e of story.timeline) {
    const fields = (e.diff ?? []).map((d) =>
      e.created ? `${printable(d.field)} ${short(d.after)}` : `${printable(d.field)} ${short(d.before)} → ${short(d.after)}`,
    );
    const diff = e.created ? `created with ${fields.join(", ") || "no fields"}` : fields.join(", ");
    lines.push(
      `  ${at(e.at)} ${printable(e.type)} ${printable(e.eventId)}: ${shownStatus(e.status)}` +
        (e.entry === "change" ? ` (${printable(e.source ?? "")})${diff ? `: ${diff}` : ""}` : `, ${plural(e.attempts, "attempt")}`),
    );
  }
  if (story.nextCursor) lines.push("older events: GET /records/{kind}/{id}?cursor=… or the console's record page");
  return lines.join("\n");
}

const eventsHelp = `svc-webhooks events show <event-id> [--account <id>] [--url <url>] [--json]

Tells one event as the console's event page does: its type, status and attempts, each handler's
latest outcome and every kept attempt (when, how long, the error, the next retry), and its durable
steps as a table. --account reads that registered account's event log (default's without it). --json prints
the document GET /events/{id} answers (payload and durable steps included). It reads where
replay acts: the service at --url (with ADMIN_TOKEN), else the event log the environment names
(through the running service's embedded server when it holds DATA_DIR).`;

async function runEvents(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { values, positionals } = parseFlags({
    args: argv,
    options: flagOptions(["url", "account"]),
    allowPositionals: true,
    strict: true,
  });
  const [verb, id, ...extra] = positionals;
  if (verb !== "show") throw new UsageError(`events takes show <event-id>${verb ? didYouMean(verb, ["show"]) : ""}`);
  if (!id || extra.length > 0) throw new UsageError("events show takes one event id");
  const event = await read(
    { url: values.url, env, account: accountParam(values.account) },
    `/events/${encodeURIComponent(id)}`,
    EventAnswer,
    (stores) => readEventDetail(stores, id),
    `event_not_found: no event ${printable(id)} in the event log`,
  );
  return answer(event, sayEvent(event));
}

export const events: Command = { help: eventsHelp, answers: true, run: runEvents };

const recordsHelp = `svc-webhooks records show <kind> <id> [--account <id>] [--url <url>] [--json]

Tells a record's story as the console's record page does: the mirror's copy (when it was read and
which change last wrote it), whether the mirror refused it or the API's lists lost it, and every
event of the log that named it, newest first, each change with its fields before → after.
Kinds: ${MIRROR_KINDS.join(", ")}. --account reads that registered account's mirror and log
(default's without it: companies share restaurant ids, not records). --json prints the document GET /records/{kind}/{id} answers. It
reads where replay acts: the service at --url (with ADMIN_TOKEN), else the database the
environment names (through the running service's embedded server when it holds DATA_DIR).`;

async function runRecords(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { values, positionals } = parseFlags({
    args: argv,
    options: flagOptions(["url", "account"]),
    allowPositionals: true,
    strict: true,
  });
  const [verb, kind, id, ...extra] = positionals;
  if (verb !== "show") throw new UsageError(`records takes show <kind> <id>${verb ? didYouMean(verb, ["show"]) : ""}`);
  if (!kind || !id || extra.length > 0) throw new UsageError(`records show takes a kind (${MIRROR_KINDS.join(", ")}) and an id`);
  if (!(MIRROR_KINDS as readonly string[]).includes(kind))
    throw new UsageError(`no record kind "${printable(kind)}"${didYouMean(kind, MIRROR_KINDS)} (kinds: ${MIRROR_KINDS.join(", ")})`);
  const story = await read(
    { url: values.url, env, account: accountParam(values.account) },
    `/records/${kind}/${encodeURIComponent(id)}`,
    recordStory(kind as MirrorKind),
    (stores) => readStory(stores, kind as MirrorKind, id),
    `record_not_found: nothing is known of ${kind} ${printable(id)}`,
  );
  return answer(story, sayStory(story));
}

export const records: Command = { help: recordsHelp, answers: true, run: runRecords };
