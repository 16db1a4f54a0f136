import type { OpsSummary } from "../../metrics/metrics.js";
import type { MirrorReader } from "../mirror-routes.js";
import type { RecordReader } from "../record-routes.js";
export type { RecordStoryView as ConsoleRecordStory, TimelineEntryView as ConsoleTimelineEntry } from "../record-routes.js";
import type { HealthView } from "./health-figures.js";

/** A handler's latest outcome, as the event log keeps it. */
export interface ConsoleHandlerOutcome {
  status: "ok" | "failed";
  error?: string;
  stack?: string;
  attempts: number;
}

/** One attempt of one handler (the event log's handler attempts). */
export interface ConsoleHandlerAttempt {
  handler: string;
  /** n of "attempt n of N", as log lines number it. */
  attempt: number;
  /** N of "attempt n of N". */
  of: number;
  startedAt: Date;
  durationMs: number;
  outcome: "ok" | "failed";
  error: string | null;
  nextRetryAt: Date | null;
}

/** One event of the log as the console shows it (the log's own shape, handler attempts and steps added). */
export interface ConsoleEvent {
  id: string;
  type: string;
  receivedAt: Date;
  status: string;
  payload: unknown;
  attempts: number;
  handlers: Record<string, ConsoleHandlerOutcome>;
  updatedAt: Date;
  handlerAttempts?: readonly ConsoleHandlerAttempt[];
  steps?: readonly unknown[];
}

export type ConsoleEventSummary = Omit<ConsoleEvent, "payload" | "steps" | "handlerAttempts">;

export interface ConsoleChange {
  id: string;
  receivedAt: Date;
  kind: string;
  recordId: string;
  before: unknown;
  after: unknown;
  changed: string[];
  source: string;
}

export interface ConsoleFailureGroup {
  handler: string;
  fingerprint: string;
  fingerprinted: boolean;
  error: string;
  status: "failed" | "received";
  events: number;
  firstAt: Date;
  lastAt: Date;
  sampleId: string;
}

/**
 * What the console reads; the service wires the event log, the mirror and the metrics in (http
 * imports none of them). Every read is an operator read: bounded in time, a coded error on bad input.
 */
export interface ConsoleSources {
  events: {
    get(id: string): Promise<ConsoleEvent | undefined>;
    /** GET /events's query: its parameters, strictly (a bad one throws invalid_filter). */
    query(query: Record<string, string>): Promise<{ data: ConsoleEventSummary[]; nextCursor: string | null }>;
  };
  /** Change events recorded for the record an event named, after it (see mirror/caused-changes.ts). */
  changesAfter(event: ConsoleEvent): Promise<ConsoleChange[]>;
  failureGroups(range: { since: Date; until?: Date | undefined }): Promise<ConsoleFailureGroup[]>;
  mirror: MirrorReader & {
    /** When each listed record was last read from the API and written here. */
    bookkeeping(kind: string, ids: readonly string[]): Promise<Map<string, { readAt: Date; syncedAt: Date }>>;
  };
  summary(): Promise<OpsSummary>;
  records: RecordReader & {
    /** The kinds holding a record of this id (the mirror's, else the kinds of the events naming it); empty when none. */
    find(id: string): Promise<string[]>;
  };
  /** The health page's data: the summary, the shared minute samples of the hour up to `now`, the config's limits. */
  health(now: Date): Promise<Omit<HealthView, "now">>;
}
