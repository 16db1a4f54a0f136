/**
 * Where the event worker records what it took and what each handler did with it (the event log
 * in PostgreSQL implements it). A throw fails the job's attempt, so a database that is down makes
 * the job retry: nothing is handled without being recorded.
 */
export interface EventJournal {
  received(event: { id: string; type: string; payload: unknown }): Promise<unknown>;
  handlerOutcome(id: string, key: string, outcome: { status: "ok" | "failed"; error?: string }): Promise<void>;
  finish(id: string, status: "handled" | "failed"): Promise<void>;
}
