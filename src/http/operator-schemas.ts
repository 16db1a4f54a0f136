import * as z from "zod";
import { SIGNATURE_SCHEMES } from "../config/config.js";
import { EVENT_STATUSES, HANDLER_STATUSES } from "../mirror/database.js";
import { EVENT_QUERY_PARAMS, REPLAY_FILTER_FIELDS } from "../mirror/event-log.js";
import { MIRROR_QUERY_PARAMS } from "../mirror/mirror-store.js";
import { ACCOUNT_ID, newAccountSchema, rotationSchema } from "../mirror/accounts.js";
import { type MirrorKind } from "../mirror/kinds.js";
import { MAX_ID_LENGTH } from "../base/text.js";
import { PROBLEM_KINDS, PROBLEM_STATES, type Problem as ProblemShape } from "../problems/problem.js";
import { bookingSchema, menuItemSchema, orderSchema, reviewSchema } from "../upstream/models.js";

// The operator API's shapes, in one home: what each route takes (bodies, parameters, headers) and
// what it answers, as JSON on the wire (times are ISO 8601 strings). The routes parse their bodies
// with the request schemas (operator-routes.ts), the registry parses an account's with its own
// (mirror/accounts.ts, named here), the document is generated from all of them (openapi.ts), the
// contract test holds every real answer to the answer schemas, and the CLI's operator client
// takes its types from them (`z.infer`) and parses what a service answers with them.
//
// Requests are closed (`z.strictObject`: an unknown field is refused, as the routes do); answers
// are open (`z.object`), so a client reads a newer service's answer with a field it does not
// know; the contract test closes them, so the service sends no field the document lacks.

// ---- Shared pieces

/** A time as the API sends it: `Date#toISOString()`, UTC. */
const Timestamp = z.iso.datetime().meta({ description: "ISO 8601, UTC (2026-11-23T10:00:00.000Z)" });
/** The cursor of the next page; null when there is none. A page may be short, even empty, and still have one. */
const NextCursor = z.string().nullable().meta({ description: "pass as `cursor` for the next page; null: nothing further" });

/** Every refusal and failure of the service: a stable code and a sentence. */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().meta({ description: "stable, snake_case (invalid_filter, event_not_found, unauthorized, …)" }),
      message: z.string().meta({ description: "what is wrong, for people; never a secret" }),
    }),
  })
  .meta({ id: "Error" });

/** `?account=`: the registered account a call is about (docs/accounts.md); none or `default`: the env-configured company. */
const account = z.string().optional().meta({ description: "a registered account's id; none: the default company (`default`)" });
export const AccountQuery = z.strictObject({ account });

/** A list route's parameters: the store's own list of them (which refuses any other), each a described string, and `account`. */
const listQuery = <P extends string>(params: readonly P[], docs: Record<P, string>) =>
  z.strictObject({
    ...Object.fromEntries(params.map((name) => [name, z.string().optional().meta({ description: docs[name] })])),
    account,
  });

// ---- Events: the log's reads

const EventQueryDocs: Record<(typeof EVENT_QUERY_PARAMS)[number], string> = {
  since: "received at or after (ISO 8601 date or timestamp with a zone)",
  until: "received before (ISO 8601 date or timestamp with a zone)",
  type: "an event type (order.created) or a family (order.*)",
  status: "received, retrying (its last attempt failed and it will be tried again), handled or failed",
  handler: "only events this handler key ran on (user:order.created)",
  handlerStatus: "with handler: that handler's outcome (ok, failed)",
  fingerprint: "with handler: the events on which it failed with an error of this fingerprint",
  limit: "summaries per page, 1–1000 (default 100); a page also stops before 1 MiB",
  cursor: "the previous page's nextCursor",
  order: "oldest (default) or newest first",
};
/** GET /events's parameters: the event log's own list (EVENT_QUERY_PARAMS, which refuses any other), and `account`. */
export const EventListQuery = listQuery(EVENT_QUERY_PARAMS, EventQueryDocs);

const HandlerOutcome = z
  .object({
    status: z.enum(HANDLER_STATUSES),
    error: z.string().optional(),
    stack: z.string().optional(),
    fingerprint: z.string().optional().meta({ description: "the error's first line with ids, numbers, times and hex masked" }),
    attempts: z.number().int(),
  })
  .meta({ id: "HandlerOutcome", description: "a handler's latest outcome" });

const eventFields = {
  id: z.string(),
  type: z.string(),
  receivedAt: Timestamp,
  status: z.enum(EVENT_STATUSES).meta({ description: "received (also while retrying), handled or failed" }),
  attempts: z.number().int().meta({ description: "deliveries to a worker: 1, plus one per retry or replay" }),
  handlers: z.record(z.string(), HandlerOutcome).meta({ description: "each handler's latest outcome, by handler key" }),
  updatedAt: Timestamp,
};

export const EventSummary = z
  .object({
    ...eventFields,
    record: z
      .object({ kind: z.string(), id: z.string() })
      .nullable()
      .meta({ description: "the record the event names; null when it names none" }),
  })
  .meta({ id: "EventSummary", description: "an event without its payload; each handler's error cut to 300 characters" });

export const EventPage = z.object({ data: z.array(EventSummary), nextCursor: NextCursor }).meta({ id: "EventPage" });

const HandlerAttempt = z
  .object({
    handler: z.string(),
    replay: z.number().int().meta({ description: "0: the first delivery; k: the k-th replay" }),
    attempt: z.number().int(),
    of: z.number().int(),
    startedAt: Timestamp,
    durationMs: z.number(),
    outcome: z.enum(HANDLER_STATUSES),
    error: z.string().nullable(),
    nextRetryAt: Timestamp.nullable(),
  })
  .meta({ id: "HandlerAttempt" });

const Step = z
  .object({
    handler: z.string(),
    name: z.string(),
    status: z.enum(["started", "done", "failed"]),
    runs: z.number().int(),
    attempt: z.number().int(),
    startedAt: Timestamp,
    finishedAt: Timestamp.nullable(),
    durationMs: z.number().nullable(),
    resultBytes: z.number().int().nullable(),
    error: z.string().nullable(),
  })
  .meta({ id: "Step", description: "a durable step (ctx.step) of one of the event's handlers" });

export const EventDetail = z
  .object({
    ...eventFields,
    payload: z.unknown().meta({ description: "the payload as first delivered" }),
    handlerAttempts: z.array(HandlerAttempt),
    steps: z.array(Step),
  })
  .meta({ id: "EventDetail", description: "one event whole: payload, full errors, every kept attempt of each handler, its steps" });

// ---- The write API: replays and sync requests

export const ReplayOneBody = z.strictObject({
  handler: z.string().min(1).max(MAX_ID_LENGTH).optional().meta({ description: "run only this handler key; none: every handler" }),
});

// A filter with at least one field, or `"all": true` for every event: an empty body or `{}` is
// never "all". A client that sent `/events/./replay` (an event ".") reaches this route after URL
// normalisation, with the single replay's body (`{}` or `{ handler }`), and is refused instead
// of replaying the whole log.
const FILTER_OR_ALL = `send a filter (${REPLAY_FILTER_FIELDS.join(", ")}) or "all": true for every event; one event: POST /events/{id}/replay`;
/** What a bulk replay's filter may name (each a string, read as GET /events reads it). */
export const ReplayManyBody = z
  .strictObject({
    filter: z
      .strictObject(Object.fromEntries(REPLAY_FILTER_FIELDS.map((field) => [field, z.string().optional()])))
      .optional()
      .meta({ description: "read as GET /events reads the same parameters; at least one field" }),
    all: z.literal(true, { error: '"all" takes only true' }).optional().meta({ description: "every event (and no filter)" }),
    dryRun: z.boolean().optional().meta({ description: "count, queue nothing" }),
    fresh: z.boolean().optional().meta({ description: "run the events' durable steps again" }),
    confirm: z.number().int().min(0).optional().meta({ description: "the dry run's count: needed above BULK_REPLAY_CONFIRM_ABOVE" }),
  })
  .superRefine((b, ctx) => {
    const fields = Object.values(b.filter ?? {}).filter((v: string | undefined) => v !== undefined).length;
    if (b.all === true && fields > 0)
      ctx.addIssue({ code: "custom", path: ["all"], message: '"all": true replays every event; drop the filter or "all"' });
    if (b.all !== true && fields === 0) ctx.addIssue({ code: "custom", path: ["filter"], message: FILTER_OR_ALL });
  });

/** The Idempotency-Key a replay may carry (checked by the route: 1–200 visible ASCII characters). */
export const IdempotencyHeaders = z.strictObject({
  "idempotency-key": z
    .string()
    .regex(/^[\x21-\x7e]{1,200}$/)
    .optional()
    .meta({ description: "the same key answers the same replay (24 h; a bulk replay's id 7 days); with other parameters: 422" }),
});

// A reconciliation takes no options (an empty body); a backfill its kinds, since and restart.
export const SyncBodies = {
  reconcile: z.strictObject({}),
  backfill: z.strictObject({
    kinds: z.array(z.string()).optional().meta({ description: "kinds to read (orders, bookings, menu-items); none: all" }),
    since: z.string().optional().meta({ description: "an ISO 8601 date: records from then on" }),
    restart: z.boolean().optional().meta({ description: "start the walk over instead of resuming it" }),
  }),
};

export const ReplayStarted = z
  .object({ event: z.string(), replay: z.object({ id: z.string(), handlers: z.array(z.string()) }) })
  .meta({ id: "ReplayStarted" });
export const BulkCount = z.object({ count: z.number().int() }).meta({ id: "BulkCount", description: "a dry run: how many events match" });
export const BulkStarted = z.object({ count: z.number().int(), id: z.string() }).meta({ id: "BulkStarted" });
export const BulkProgress = z
  .object({
    id: z.string(),
    total: z.number().int(),
    done: z.number().int(),
    failed: z.number().int(),
    withdrawn: z.number().int().meta({ description: "jobs a cancel took off the queue unrun" }),
    state: z.enum(["running", "done", "cancelled"]),
  })
  .meta({ id: "BulkProgress" });
export const SyncQueued = z
  .object({
    job: z.string(),
    runs: z.enum(["now", "after the running pass"]).optional().meta({ description: "reconcile only" }),
  })
  .meta({ id: "SyncQueued" });

// ---- The mirror and a record's story

/** Each kind's record, in the API's own shape (unknown fields kept): the upstream's schemas. */
export const MIRROR_RECORDS = {
  orders: orderSchema.meta({ id: "Order" }),
  bookings: bookingSchema.meta({ id: "Booking" }),
  "menu-items": menuItemSchema.meta({ id: "MenuItem" }),
  reviews: reviewSchema.meta({ id: "Review" }),
} satisfies Record<MirrorKind, z.ZodType>;

const MirrorQueryDocs: Record<(typeof MIRROR_QUERY_PARAMS)[number], string> = {
  restaurantId: "one restaurant's records",
  status: "orders: an order status; bookings: an upper-case status",
  from: "inclusive: orders' createdAt, bookings' date (ISO 8601)",
  to: "exclusive, as from",
  limit: "records per page, 1–100 (default 50); a page also stops before 1 MiB",
  cursor: "the previous page's nextCursor",
};
/** GET /mirror/{kind}'s parameters: the mirror's own list (MIRROR_QUERY_PARAMS, which refuses any other), and `account`. */
export const MirrorListQuery = listQuery(MIRROR_QUERY_PARAMS, MirrorQueryDocs);

export const mirrorPage = (kind: MirrorKind) =>
  z.object({ data: z.array(MIRROR_RECORDS[kind]), nextCursor: NextCursor }).meta({ description: `${kind} in id order` });

export const RecordQuery = z.strictObject({ cursor: z.string().optional().meta({ description: "older timeline entries" }), account });

const FieldDiff = z.object({ field: z.string(), before: z.unknown(), after: z.unknown() }).meta({ id: "FieldDiff" });

const TimelineEntry = z
  .object({
    entry: z.enum(["delivery", "change"]),
    eventId: z.string(),
    type: z.string(),
    at: Timestamp,
    status: z.enum(EVENT_STATUSES),
    attempts: z.number().int(),
    handlers: z.record(z.string(), HandlerOutcome),
    source: z.string().optional().meta({ description: "changes: webhook, reconcile or backfill" }),
    diff: z.array(FieldDiff).optional().meta({ description: "changes: each changed field" }),
    created: z.boolean().optional().meta({ description: "changes: the change created the record" }),
  })
  .meta({ id: "TimelineEntry" });

export const recordStory = (kind: MirrorKind) =>
  z.object({
    kind: z.literal(kind),
    id: z.string(),
    record: z
      .object({
        data: MIRROR_RECORDS[kind],
        readAt: Timestamp,
        syncedAt: Timestamp,
        lastChange: z.object({ eventId: z.string(), at: Timestamp, source: z.string() }).nullable(),
      })
      .nullable()
      .meta({ description: "the mirror's copy; null when it holds none" }),
    restaurantId: z.string().nullable(),
    rejected: z
      .object({ reason: z.string(), detail: z.string(), lastSeen: Timestamp, count: z.number().int() })
      .nullable()
      .meta({ description: "set when the mirror refused the record as read" }),
    unlisted: z
      .object({ eventIds: z.array(z.string()), givenUpAt: Timestamp, attempts: z.number().int() })
      .nullable()
      .meta({ description: "set when a refresh gave up looking for it in the API's lists" }),
    timeline: z.array(TimelineEntry).meta({ description: "every event naming the record, newest first, 200 a page" }),
    nextCursor: NextCursor,
  });

export const RefreshQueued = z.object({ kind: z.string(), id: z.string(), restaurantId: z.string() }).meta({ id: "RefreshQueued" });

// ---- Accounts

/** The registry's own checks (mirror/accounts.ts): what POST /accounts and rotate take. */
export const NewAccountBody = newAccountSchema;
export const RotationBody = rotationSchema;

export const AccountSummary = z
  .object({
    id: z.string(),
    signingSecrets: z.number().int().meta({ description: "how many signing secrets it holds (never a value)" }),
    alertUrl: z.boolean().meta({ description: "whether it names its own alert URL (never the URL)" }),
    signatureScheme: z.enum(SIGNATURE_SCHEMES).meta({ description: "how its deliveries are signed" }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: "AccountSummary" });

/** An account added or rotated: `warning` when its new key could not be tried (the API unreachable). */
export const AccountChange = AccountSummary.extend({
  warning: z.string().optional().meta({ description: "the key could not be tried (the API unreachable); the account is stored" }),
}).meta({ id: "AccountChange" });

const AccountSync = z
  .object({
    state: z
      .enum(["importing", "live", "key_refused"])
      .meta({ description: "importing until every kind's whole list was walked once; key_refused while the API refuses its key" }),
    kinds: z.record(z.string(), z.object({ records: z.number().int(), walked: z.boolean() })),
  })
  .meta({ id: "AccountSync" });

export const ListedAccount = AccountSummary.extend({ sync: AccountSync }).meta({ id: "ListedAccount" });
export const AccountList = z.object({ data: z.array(ListedAccount) }).meta({ id: "AccountList" });

export const AccountHealth = ListedAccount.extend({
  budget: z
    .object({
      inWindow: z.number().int(),
      max: z.number().int(),
      byClass: z.record(z.string(), z.number()),
      pausedForMs: z.number(),
    })
    .optional()
    .meta({ description: "its key's budget now, shared by every process (when the service has an API)" }),
  pendingRefreshes: z.record(z.string(), z.number().int()).meta({ description: "ids its events asked to be read again, per kind" }),
}).meta({ id: "AccountHealth" });

export const RemoveQuery = z.strictObject({
  purge: z.enum(["true", "false"]).optional().meta({ description: "true: also delete its rows, events, steps and checkpoints" }),
});
export const AccountRemoved = z.object({ id: z.string(), removed: z.literal(true), purged: z.boolean() }).meta({ id: "AccountRemoved" });

// ---- Problems (issue 53: the problem store's reads)

export const ProblemsQuery = z.strictObject({
  state: z
    .enum([...PROBLEM_STATES, "all"])
    .optional()
    .meta({ description: "open (default), resolved or all" }),
  account: z
    .string()
    .regex(ACCOUNT_ID, "an account id (a slug: a-z, 0-9 and -)")
    .optional()
    .meta({ description: "one account's; none: every account's and the deployment's" }),
  kind: z.enum(PROBLEM_KINDS).optional(),
});

export const Problem = z
  .object({
    id: z.string(),
    account: z.string().nullable().meta({ description: "null: the deployment's (the API's address, the database)" }),
    kind: z.enum(PROBLEM_KINDS),
    subject: z.string(),
    state: z.enum(PROBLEM_STATES),
    openedAt: Timestamp,
    resolvedAt: Timestamp.nullable(),
    lastSeenAt: Timestamp,
    count: z.number().int(),
    cause: z.string().meta({ description: "bounded text naming what failed; never a secret" }),
  })
  .meta({ id: "Problem" }) satisfies z.ZodType<ProblemShape>;
/** GET /problems's answer: the open ones first (newest opening first), then the resolved. */
export const ProblemList = z.object({ data: z.array(Problem) }).meta({ id: "ProblemList" });

// ---- Health (no token)

export const Alive = z.object({ status: z.literal("ok") });
export const Ready = z.object({ status: z.literal("ready") });

/** The answers' types as a client reads them (JSON: times are strings). */
export type ListedAccountAnswer = z.infer<typeof ListedAccount>;
