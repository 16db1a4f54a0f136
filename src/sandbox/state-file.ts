import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import type { Logger } from "pino";
import * as z from "zod";
import { NamedError } from "../errors.js";
import { idOf, SANDBOX_ID, type SandboxStore } from "./store.js";
import { ORDER_STATUSES, ORDER_TYPES, type SandboxRecords } from "./records.js";

const FORMAT = 1;
/** Of each kind that grows (orders, bookings, reviews), the newest a save keeps: the file stays bounded (about 25 MB at the simulation's mix). */
const KEEP_RECORDS = 10_000;
/** Of a record's history, the newest states a save keeps (a menu item changes without end). */
const KEEP_STATES = 10;

// Each record's values as the sandbox itself writes them, so a file edited by hand (or by an older
// sandbox) with a status its state machine does not have, a total that is no amount, a date that
// is no timestamp, an id it never gives (a NUL, "..") or two records of one id is refused at
// start, naming the record, rather than served to the service, which would then refuse its own
// sandbox's records. Fields not named here are the sandbox's own writing.
const id = z
  .string({ error: "is not an id" })
  .min(1, "is empty")
  .regex(SANDBOX_ID, 'is not an id the sandbox gives (a prefix, "_", letters or digits)');
const timestamp = z.iso.datetime({ error: "is not an ISO timestamp" });
const amount = z.number({ error: "is not an amount" }).nonnegative("is not an amount");
const count = z.number({ error: "is not a whole number" }).int("is not a whole number").nonnegative("is negative");
const currency = z.string({ error: "is not a currency code" }).regex(/^[A-Z]{3}$/, "is not a currency code");
const record = z.looseObject({ id, restaurantId: id, createdAt: timestamp });
const order = record
  .extend({
    status: z.enum(ORDER_STATUSES, { error: "is not an order status" }),
    type: z.enum(ORDER_TYPES, { error: "is not an order type" }),
    subtotal: amount,
    tax: amount,
    tip: amount,
    total: amount,
    currency,
    paidAt: timestamp.nullable(),
    refundedAt: timestamp.nullable(),
    items: z.array(z.looseObject({ id, menuItemId: id, quantity: count.min(1, "is not a quantity"), price: amount })),
  })
  .superRefine(orderStates);
const fileSchema = z
  .object({
    format: z.literal(FORMAT),
    restaurants: z.array(z.looseObject({ id, name: z.string() })).min(1),
    orders: z.array(order),
    bookings: z.array(
      record.extend({
        status: z.enum(["CONFIRMED", "CANCELLED"], { error: "is not a booking status" }),
        date: timestamp,
        time: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, "is not a time HH:MM"),
        partySize: count.min(1, "is not a party size"),
      }),
    ),
    menuItems: z.array(z.looseObject({ id, restaurantId: id, updatedAt: timestamp, price: amount, currency, stock: count.nullable() })),
    reviews: z.array(record.extend({ rating: z.number({ error: "is not a rating" }).min(1, "is not a rating").max(5, "is not a rating") })),
    history: z.array(z.tuple([z.string(), z.array(z.unknown())])),
  })
  .superRefine(recordsAgree);

/**
 * What an order's dates say of its status, as the sandbox's actions write them (sandbox/store.ts):
 * `refundedAt` only and always on a REFUNDED order, which was paid (only a paid order is refunded),
 * no payment before the order and no refund before its payment. A PENDING order may be paid: the
 * sandbox takes orders paid at checkout (`paidAt` is their `createdAt`), so that is no error.
 */
function orderStates(o: { status: string; createdAt: string; paidAt: string | null; refundedAt: string | null }, ctx: z.RefinementCtx) {
  const issue = (field: "paidAt" | "refundedAt", message: string) => ctx.addIssue({ code: "custom", path: [field], message });
  const refunded = o.status === "REFUNDED";
  if (o.refundedAt !== null && !refunded) issue("refundedAt", `is set on an order that is ${o.status}, not REFUNDED`);
  if (o.refundedAt === null && refunded) issue("refundedAt", "is not set on a REFUNDED order");
  if (o.paidAt === null && refunded) issue("paidAt", "is not set on a REFUNDED order (only a paid order is refunded)");
  if (o.paidAt !== null && Date.parse(o.paidAt) < Date.parse(o.createdAt))
    issue("paidAt", `is before the order's createdAt (${o.createdAt})`);
  if (o.paidAt !== null && o.refundedAt !== null && Date.parse(o.refundedAt) < Date.parse(o.paidAt))
    issue("refundedAt", `is before the order's paidAt (${o.paidAt})`);
}

/** The kinds whose records the store keeps by id, one map each, and finds across kinds (`record(id)`). */
const RECORD_KINDS = ["orders", "bookings", "menuItems", "reviews"] as const;

/** Across the file: one record per id (the store keeps one per id), and every restaurantId a restaurant of the file. */
function recordsAgree(
  file: Record<(typeof RECORD_KINDS)[number], { id: string; restaurantId: string }[]> & { restaurants: { id: string }[] },
  ctx: z.RefinementCtx,
) {
  const firstOf = (list: { id: string }[], kind: string, seen: Map<string, string>) =>
    list.forEach((r, i) => {
      const earlier = seen.get(r.id);
      if (earlier === undefined) seen.set(r.id, `${kind} #${i}`);
      else ctx.addIssue({ code: "custom", path: [kind, i, "id"], message: `is also the id of ${earlier}` });
    });
  firstOf(file.restaurants, "restaurants", new Map());
  const restaurants = new Set(file.restaurants.map((r) => r.id));
  const ids = new Map<string, string>();
  for (const kind of RECORD_KINDS) {
    firstOf(file[kind], kind, ids);
    file[kind].forEach((r, i) => {
      if (!restaurants.has(r.restaurantId))
        ctx.addIssue({ code: "custom", path: [kind, i, "restaurantId"], message: "is no restaurant of the file" });
    });
  }
}

/** The kinds of record a state file holds, each a list of records with an id. */
const KINDS = new Set(["restaurants", "orders", "bookings", "menuItems", "reviews"]);

/**
 * An issue of a state file as one phrase: for a record's field, the record (kind and id), the
 * field and its value (`orders ord_12: status "BOGUS" is not an order status`); otherwise the path.
 */
function describeIssue(json: unknown, issue: z.core.$ZodIssue): string {
  const [kind, index, ...field] = issue.path;
  const list = typeof kind === "string" && KINDS.has(kind) ? (json as Record<string, unknown>)[kind] : undefined;
  const item = Array.isArray(list) && typeof index === "number" ? (list[index] as unknown) : undefined;
  if (typeof item !== "object" || item === null || field.length === 0) return `${issue.path.join(".")}: ${issue.message}`;
  const itemId = (item as { id?: unknown }).id;
  // An id that breaks the id rule (a NUL, a line break) is named by its place, and shown escaped as the field's value.
  const which = typeof itemId === "string" && SANDBOX_ID.test(itemId) ? itemId : `#${index as number}`;
  let value: unknown = item;
  for (const key of field) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  const shown = value === undefined ? "is missing" : `${JSON.stringify(value).slice(0, 60)} ${issue.message}`;
  return `${kind as string} ${which}: ${field.join(".")} ${shown}`;
}

/**
 * The JSON of `file` as `schema` reads it; undefined when there is no such file (a first run).
 * `refuse` makes the error of a file that is not that: `problem` is undefined for one that is not JSON.
 */
function readJsonFile<T>(file: string, schema: z.ZodType<T>, refuse: (problem: string | undefined) => Error): T | undefined {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    // JSON.parse's only error; a file that cannot be read is thrown as it is.
    if (err instanceof SyntaxError) throw refuse(undefined);
    throw err;
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw refuse(issue ? describeIssue(json, issue) : "unreadable");
}

/** The records and histories an earlier run saved in `file`; undefined when there is no file. */
export function readStateFile(file: string) {
  const saved = readJsonFile(file, fileSchema, (problem) =>
    problem === undefined
      ? new SandboxStateFileError(`sandbox state ${file} is not valid JSON`)
      : new SandboxStateFileError(`sandbox state ${file}: ${problem}`),
  );
  return saved as unknown as (SandboxRecords & { history: [string, unknown[]][] }) | undefined;
}

/** The store's records as a state file holds them: the newest of each growing kind, oldest first. */
export function stateFileJson(store: SandboxStore, history: RecordHistory): string {
  const newest = <T extends { createdAt: string }>(map: Map<string, T>) => {
    const all = [...map.values()];
    if (all.length > KEEP_RECORDS) all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
    return all.slice(-KEEP_RECORDS);
  };
  const records: SandboxRecords = {
    restaurants: store.restaurants,
    orders: newest(store.orders),
    bookings: newest(store.bookings),
    menuItems: [...store.menuItems.values()],
    reviews: newest(store.reviews),
  };
  const kept = new Set([...records.orders, ...records.bookings, ...records.menuItems, ...records.reviews].map((r) => r.id));
  return JSON.stringify({ format: FORMAT, ...records, history: history.newest((id) => kept.has(id), KEEP_STATES) });
}

/** A file the sandbox keeps across runs (its records, its id counter) that it cannot read back. */
export class SandboxStateFileError extends NamedError {}

/**
 * Writes `json()` to `file` every `intervalMs` while `changes()` moved since the last write, and
 * once more at `stop()`. Each write replaces the file whole (a temporary file renamed over it), so
 * a crash leaves the previous save, never half of one. A failed write is a warning: the sandbox
 * goes on, and its next save tries again.
 */
export function startStateSaver(opts: {
  file: string;
  json: () => string;
  changes: () => number;
  /** Whether `file` already holds the current records (they were just loaded from it). */
  current: boolean;
  intervalMs: number;
  logger: Logger | undefined;
}): { stop(): Promise<void> } {
  let saved = opts.current ? opts.changes() : -1;
  let running: Promise<void> | undefined;
  const save = (): Promise<void> => {
    const at = opts.changes();
    if (running || at === saved) return running ?? Promise.resolve();
    const tmp = `${opts.file}.tmp`;
    running = writeFile(tmp, opts.json())
      .then(() => rename(tmp, opts.file))
      .then(
        () => void (saved = at),
        (err: unknown) => opts.logger?.warn({ err: (err as Error).message, file: opts.file }, "sandbox state not saved"),
      )
      .finally(() => (running = undefined));
    return running;
  };
  // A fresh start is on disk at once: a crash before the first interval still restarts from it.
  void save();
  const timer = setInterval(() => void save(), opts.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await save();
    },
  };
}

/** Copies of the sandbox's records, for tests and the control routes (changing them changes nothing). */
export function stateView(store: SandboxStore, history: RecordHistory) {
  const copy = <T>(map: Map<string, T>) => [...map.values()].map((v) => structuredClone(v));
  return {
    restaurants: () => store.restaurants.map((r) => ({ ...r })),
    orders: () => copy(store.orders),
    bookings: () => copy(store.bookings),
    menuItems: () => copy(store.menuItems),
    reviews: () => copy(store.reviews),
    /**
     * Every state a record (order, booking, menu item or review) has had, oldest first: its seeded
     * or created state, then one copy after each change. Empty for an unknown id.
     */
    history: (id: string): unknown[] => history.of(id, store.record(id)),
  };
}

export type StateView = ReturnType<typeof stateView>;

/** Ids a run takes at once: one small write per this many new records. */
const BLOCK = 1000;
/** Ids are 8 base-36 digits, as the seeded ones. */
const SPACE = 36n ** 8n;
// About 0.618 of the space (consecutive ids land far apart), odd and not a multiple of 3, so
// coprime with 36⁸: n ↦ n·M + C (mod 36⁸) is a bijection, and counter ids look as scattered as
// seeded ones without two ever being equal.
const M = 1_743_541_249_867n;
const C = 1_234_567_890_123n;

const counterSchema = z.object({ next: z.number().int().min(0) });

/**
 * Record ids (`ord_…`) that never repeat across runs over the same `file`, a crash included:
 * each is drawn from a counter whose next block is written to `file` before the first id of that
 * block is given out, so a run always starts past every id an earlier run could have given. An id
 * `taken` accepts (one a record the sandbox holds has) is never given either.
 */
export function reservedIds(file: string, taken: (id: string) => boolean): (prefix: string) => string {
  let next = readJsonFile(file, counterSchema, () => new SandboxStateFileError(`${file} is not the sandbox's id counter`))?.next ?? 0;
  let reservedUntil = next;
  const draw = (prefix: string) => {
    if (next >= reservedUntil) {
      reservedUntil = next + BLOCK;
      writeFileSync(`${file}.tmp`, `${JSON.stringify({ next: reservedUntil })}\n`);
      renameSync(`${file}.tmp`, file);
    }
    const n = BigInt(next++);
    return idOf(prefix, (n * M + C) % SPACE);
  };
  return (prefix) => {
    // An id a kept record has is passed over: the counter's file may have been lost or replaced apart from the records.
    let id = draw(prefix);
    while (taken(id)) id = draw(prefix);
    return id;
  };
}

/**
 * Every state of every changed record (from its state before the first change, or its creation),
 * oldest first. A record never changed has its current state as its history, so a seeded history
 * of a million records costs no copies.
 */
export function createRecordHistory() {
  const states = new Map<string, unknown[]>();
  const remember = (resource: { id: string }) => {
    const kept = states.get(resource.id) ?? [];
    kept.push(structuredClone(resource));
    states.set(resource.id, kept);
  };
  return {
    /** After a change (or a creation): a copy of the record as it is now. */
    remember,
    /** Before a change: the record's state until now, unless its history already starts earlier. */
    rememberBefore: (resource: { id: string }) => {
      if (!states.has(resource.id)) remember(resource);
    },
    /** A copy of the record's states, oldest first: `current` alone when it never changed, empty for no record. */
    of: (id: string, current: unknown): unknown[] => structuredClone(states.get(id) ?? (current ? [current] : [])),
    /** For a save: the newest `max` states of each record `keep` accepts. */
    newest: (keep: (id: string) => boolean, max: number): [string, unknown[]][] =>
      [...states].filter(([id]) => keep(id)).map(([id, kept]) => [id, kept.slice(-max)]),
    /** The states an earlier run saved. */
    load: (saved: [string, unknown[]][]) => {
      for (const [id, kept] of saved) states.set(id, kept);
    },
  };
}

export type RecordHistory = ReturnType<typeof createRecordHistory>;
