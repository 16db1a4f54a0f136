import { randomUUID } from "node:crypto";
import { ownId } from "../config/defaults.js";

// A job's identity on the service's queues: its job id, or the deduplication id that stands for
// it, for each way a job is added. BullMQ adds nothing for an id it holds, so the id decides which
// adds are one job: an entry moved twice, an event restored while its job waits, a replay asked
// again, a tick fanned out to an account that already has one. Every id is one BullMQ accepts: no
// ":" and never all digits. An account's ids carry it as `ownId` writes it (config/defaults.ts).
// The refresh job's deduplication id is its queue's own (sync/refresh-queue.ts).

/** What names and deduplicates one job on the events queue. */
export interface JobIdentity {
  jobId: string;
  deduplication: { id: string; ttl: number };
}

/**
 * The id of every job carrying a stream entry's event: the entry id (`<ms>-<seq>`), which never
 * holds ":" and is never all digits, as BullMQ requires, so moving an entry twice names one job.
 */
export const entryJobId = (entryId: string): string => entryId;

/**
 * The options that make every job carrying a stream entry's event the same job: named after the
 * entry and deduplicated on the entry (a move after a claim, a retry or a dead letter added by a
 * consumer that died before its acknowledgement). Never on the event id: the edge already dropped
 * every copy of the event within its window, which starts when it accepted the first; a copy it
 * appended is a sender's retry after that window, and its own entry, which must run. (Keyed on
 * the event id, the queue's window would outlast the edge's and silently drop such a retry's
 * continuation while the consumer reports it retried.)
 */
export function entryJobIdentity(entryId: string, dedupTtlMs: number): JobIdentity {
  return { jobId: entryJobId(entryId), deduplication: { id: `entry-${entryId}`, ttl: dedupTtlMs } };
}

/**
 * An event the edge adds straight to the events queue (no ingest stream): a job id of its own,
 * deduplicated on the event id within the window, so a sender's retry adds nothing and answers the
 * first job's id.
 */
export const edgeJobIdentity = (eventId: string, dedupTtlMs: number): JobIdentity => ({
  jobId: randomUUID(),
  deduplication: { id: eventId, ttl: dedupTtlMs },
});

/**
 * The job an event the log holds as waiting is restored as: the job its latest attempt recorded
 * (so adding it while that job exists adds nothing), or for an event recorded before jobs were, an
 * id of its own, the same in every worker (base64url: an event id may hold anything). Deduplicated
 * for the window after the job ends: a worker that read the log as waiting before the job finished
 * (and was removed) adds nothing when it gets to it.
 */
export function restoredJobIdentity(
  event: { id: string; job?: string | null | undefined },
  account: string | undefined,
  dedupTtlMs: number,
): JobIdentity {
  const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");
  // Event ids are unique within a company: a registered account's own id names it too.
  const jobId = event.job ?? `logged-${account === undefined ? "" : `${b64(account)}.`}${b64(event.id)}`;
  return { jobId, deduplication: { id: `restored-${jobId}`, ttl: dedupTtlMs } };
}

/**
 * A replay's job: a fresh id (a deliberate redelivery); a bulk replay's are `<bulk id>-<n>` (n from
 * 0 in the order queued), so a cancel finds the ones still waiting without reading the queue.
 */
export const replayJobId = (bulk?: { id: string; sequence: number }): string =>
  bulk === undefined ? `replay-${randomUUID()}` : `${bulk.id}-${bulk.sequence}`;

/**
 * One event's replay asked again while its job still waits adds nothing: deduplicated on the
 * digest of what it replays (event, handler, account) until the job ends, or, with an
 * Idempotency-Key, on the key's digest for as long as the key is kept (`idempotencyTtlMs`).
 */
export const replayDeduplication = (target: string, idempotency?: { key: string; ttlMs: number }): { id: string; ttl?: number } =>
  idempotency === undefined ? { id: `replay-${target}` } : { id: `idem-${idempotency.key}`, ttl: idempotency.ttlMs };

/** A change event's job: id and deduplication id are the change id, so a batch sent again after a crash adds nothing. */
export const changeJobIdentity = (changeId: string, dedupTtlMs: number): JobIdentity => ({
  jobId: changeId,
  deduplication: { id: changeId, ttl: dedupTtlMs },
});

/** A sync job of this name for the account (a tick, a catch-up): one while it waits or runs. */
export const syncJobDeduplicationId = (name: string, account: string | undefined): string => ownId(name, account);

/** A reconciliation or backfill the operator asks for: one while it waits or runs, apart from the schedulers' ticks. */
export const operatorSyncDeduplicationId = (request: string, account: string | undefined): string => ownId(`operator-${request}`, account);

/**
 * A full tier's slice, named by its position (the kind's pass and the pages read), or the start of
 * a pass by the pass starts it follows: added once while it waits or runs.
 */
export const fullSliceJobId = (
  position: { kind: string; passStartedAt: Date; pages: number } | { after: readonly Date[] },
  account: string | undefined,
): string =>
  ownId(
    "after" in position
      ? `full-start-${position.after.map((d) => d.getTime()).join("-")}`
      : `full-${position.kind}-${position.passStartedAt.getTime()}-${position.pages}`,
    account,
  );

/**
 * One problem notification's job per transition and destination: the transition's id in
 * base64url, so any id the problem store makes is one.
 */
export const alertJobId = (transitionId: string, account: string | undefined): string =>
  `alert.${Buffer.from(transitionId, "utf8").toString("base64url")}.${account === undefined ? "deployment" : `account.${account}`}`;
