import { readFileSync } from "node:fs";
import * as z from "zod";
import type { RecordHistory } from "./record-history.js";
import { SandboxStateFileError } from "./state-file-error.js";
import type { SandboxStore } from "./store.js";
import type { SandboxRecords } from "./types.js";

const FORMAT = 1;
/** Of each kind that grows (orders, bookings, reviews), the newest a save keeps: the file stays bounded (about 25 MB at the simulation's mix). */
const KEEP_RECORDS = 10_000;
/** Of a record's history, the newest states a save keeps (a menu item changes without end). */
const KEEP_STATES = 10;

const record = z.looseObject({ id: z.string(), restaurantId: z.string(), createdAt: z.string() });
// Enough of each record's shape to list it again; the rest is the sandbox's own writing.
const fileSchema = z.object({
  format: z.literal(FORMAT),
  restaurants: z.array(z.object({ id: z.string(), name: z.string() })).min(1),
  orders: z.array(record.extend({ status: z.string() })),
  bookings: z.array(record.extend({ status: z.string(), date: z.string(), time: z.string() })),
  menuItems: z.array(z.looseObject({ id: z.string(), restaurantId: z.string(), updatedAt: z.string() })),
  reviews: z.array(record),
  history: z.array(z.tuple([z.string(), z.array(z.unknown())])),
});

interface SavedState {
  records: SandboxRecords;
  history: [string, unknown[]][];
}

/** The records and histories an earlier run saved in `file`; undefined when there is no file. */
export function readStateFile(file: string): SavedState | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SandboxStateFileError(`${file} is not valid JSON`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SandboxStateFileError(
      `${file} is not a saved sandbox state (${issue ? `${issue.path.join(".")}: ${issue.message}` : "unreadable"})`,
    );
  }
  const { history, ...records } = parsed.data;
  return { records: records as unknown as SandboxRecords, history };
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
