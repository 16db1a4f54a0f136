/** The queue every verified webhook event lands in. */
export const EVENTS_QUEUE = "events";
