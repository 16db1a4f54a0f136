import type { HandlerAttempt, LoggedEvent } from "./event-log.js";
import type { StepRecord } from "./step-store.js";
import type { Storage } from "./storage.js";

/** One event whole: the log's record, every kept attempt of each handler, and its durable steps. */
export interface EventDetail extends LoggedEvent {
  /** One row per attempt of each handler (the latest KEPT_ATTEMPTS_PER_HANDLER each), by handler key, then attempt. */
  handlerAttempts: HandlerAttempt[];
  steps: StepRecord[];
}

/** An event as GET /events/{id} and the console's event page show it; undefined when the log holds no such event. */
export async function readEventDetail(storage: Pick<Storage, "eventLog" | "steps">, id: string): Promise<EventDetail | undefined> {
  const event = await storage.eventLog.get(id);
  if (!event) return undefined;
  return { ...event, handlerAttempts: await storage.eventLog.handlerAttempts(id), steps: await storage.steps.forEvent(id) };
}
