/** The queue every verified webhook event lands in. */
export const EVENTS_QUEUE = "events";

/** The queue of refresh and reconcile jobs, apart from the events queue so a 429 pauses only it. */
export const SYNC_QUEUE = "sync";
