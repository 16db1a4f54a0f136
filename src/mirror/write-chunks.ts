import { MirrorRecordError } from "./mirror-record-error.js";
import { prepareRecord, type PreparedRecord } from "./mirror-rows.js";
import { toRejection, type Rejection } from "./rejected-records.js";
import type { MirrorKind, MirrorRecord, RefusedUpstreamRecord, RejectedRecord } from "./store.js";

// A write's records before any SQL: checked, set aside or kept, one copy per id, and cut into the
// transactions that write them.

/**
 * Ids one transaction of a write locks and writes at most. Each id is an advisory lock held to the
 * commit, and PostgreSQL's shared lock table holds about max_locks_per_transaction (64) ×
 * max_connections (100) locks by default: a page of 10,000 records in one transaction exhausted
 * it. 100 ids (a page of the API's largest) keep a write's share small at any page size.
 */
export const IDS_PER_TRANSACTION = 100;

/**
 * Each record checked on its own: the ones the mirror can hold become rows, the others are set
 * aside with their reason (one refused record never fails the batch). A refused copy of an id
 * that also came clean in the same batch is dropped: the clean copy is written.
 */
export function prepareAll(
  kind: MirrorKind,
  records: readonly MirrorRecord[],
  readAt: Date,
  upstream: readonly RefusedUpstreamRecord[] = [],
) {
  const prepared: PreparedRecord[] = [];
  const refused: { rejected: RejectedRecord; record: unknown }[] = upstream.map(({ record, field, message }) => {
    const id = (record as { id?: unknown } | null)?.id;
    const known = typeof id === "string" && id !== "" ? id : undefined;
    const error = new MirrorRecordError(kind, known, field, `as the API spec shows it (${message})`);
    return { rejected: { kind, id: known, reason: error.reason, field, message: error.message }, record };
  });
  for (const record of records) {
    try {
      prepared.push(prepareRecord(kind, record, readAt));
    } catch (err) {
      if (!(err instanceof MirrorRecordError)) throw err;
      refused.push({ rejected: { kind, id: err.id, reason: err.reason, field: err.field, message: err.message }, record });
    }
  }
  const clean = new Set(prepared.map((p) => p.id));
  const rejected = refused.filter((r) => r.rejected.id === undefined || !clean.has(r.rejected.id));
  // One row per id in the table (the last copy read); records without an id are reported only.
  const rows = new Map<string, Rejection>();
  for (const { rejected: r, record } of rejected) if (r.id !== undefined) rows.set(r.id, toRejection({ ...r, id: r.id }, record));
  const ofRecords = rejected.filter((r) => !upstream.some((u) => u.record === r.record)).length;
  return { prepared, rejected: rejected.map((r) => r.rejected), rejections: [...rows.values()], ofRecords };
}

/**
 * One copy per id from a batch: the furthest along wins, and on equal rank the first (they share a
 * read instant, and the tie rule keeps what was there first). The rest count as skipped.
 */
export function dedupe(prepared: PreparedRecord[]): PreparedRecord[] {
  const byId = new Map<string, PreparedRecord>();
  for (const p of prepared) {
    const held = byId.get(p.id);
    if (!held || p.rank > held.rank) byId.set(p.id, p);
  }
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** One transaction's share of a write: at most `size` ids, records first, then rejections. */
export interface WriteChunk {
  prepared: PreparedRecord[];
  rejections: Rejection[];
}

/**
 * Cuts a write into transactions of at most `size` ids each (records and rejections together),
 * in order. Every id is in exactly one, so each id's write, its lock and its change event stay
 * in one transaction.
 */
export function chunkWrite(
  prepared: readonly PreparedRecord[],
  rejections: readonly Rejection[],
  size = IDS_PER_TRANSACTION,
): WriteChunk[] {
  const chunks: WriteChunk[] = [];
  const units = [...prepared.map((p) => ({ prepared: p })), ...rejections.map((r) => ({ rejection: r }))];
  for (let i = 0; i < units.length; i += size) {
    const slice = units.slice(i, i + size);
    chunks.push({
      prepared: slice.flatMap((u) => ("prepared" in u ? [u.prepared] : [])),
      rejections: slice.flatMap((u) => ("rejection" in u ? [u.rejection] : [])),
    });
  }
  return chunks;
}
