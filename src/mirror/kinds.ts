import type { ChangeKind } from "../events/catalog.js";

// What differs by mirror kind, in one table: the mirror's tables, the console's words, the change
// events, the event log's record links, the freshness rule and the sync all read it here, and a
// new kind is a row (docs/architecture.md lists the other files it touches). What a kind's
// records hold (columns, schema, rank) stays with the code that reads them.

interface KindFacts {
  /** The kind's mirror table. */
  table: string;
  /** One record, in words ("menu item"). */
  noun: string;
  /** Its events' family: `order` for `order.created`, … (the event log's `record_kind`, migrations.ts 0013). */
  family: string;
  /** The kind of its change events (`change.<kind>`), or none: a kind stored as delivered produces none. */
  changeKind: ChangeKind | null;
  /**
   * Arrives only by webhook (the API has no list to read it from): never synced or reconciled, and
   * may be quiet for a day, so no freshness rule holds it (the console and SvcMirrorStale leave it out).
   */
  webhookOnly: boolean;
}

export const KINDS = {
  orders: { table: "orders", noun: "order", family: "order", changeKind: "order", webhookOnly: false },
  bookings: { table: "bookings", noun: "booking", family: "booking", changeKind: "booking", webhookOnly: false },
  "menu-items": { table: "menu_items", noun: "menu item", family: "menu_item", changeKind: "menu_item", webhookOnly: false },
  reviews: { table: "reviews", noun: "review", family: "review", changeKind: null, webhookOnly: true },
} as const satisfies Record<string, KindFacts>;

/** The kinds of record the mirror keeps, as routes and the console name them. */
export type MirrorKind = keyof typeof KINDS;
export const MIRROR_KINDS = Object.keys(KINDS) as readonly MirrorKind[];

/** The kinds read from the API (every kind but those that arrive only by webhook). */
export type SyncedKind = { [K in MirrorKind]: (typeof KINDS)[K]["webhookOnly"] extends true ? never : K }[MirrorKind];

/** Whether text from outside (a route's segment, a metric label) names one of the mirror's kinds. */
export const isMirrorKind = (kind: string): kind is MirrorKind => Object.hasOwn(KINDS, kind);

/** Whether a kind (as a metric label or a route names it) has a freshness rule: it is read from the API. */
export const keptFresh = (kind: string): boolean => isMirrorKind(kind) && !KINDS[kind].webhookOnly;

/** The kind's table, typed as `orders` (the columns every mirror table shares: see AnyMirrorDb). */
export const tableOf = (kind: MirrorKind) => KINDS[kind].table as "orders";

/** The change kind of a mirror kind's change events, if it produces any. */
export const changeKindOf = (kind: MirrorKind): ChangeKind | null => KINDS[kind].changeKind;

/** The mirror kind whose records a change kind's changes are of: where a change's record page is. */
export const mirrorKindOfChange = (changeKind: string): MirrorKind | undefined =>
  MIRROR_KINDS.find((kind) => KINDS[kind].changeKind === changeKind);

/** One record of a kind in words: "order", "menu item". */
export const recordNoun = (kind: MirrorKind): string => KINDS[kind].noun;
