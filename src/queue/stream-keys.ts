/**
 * The one place that names the ingest stream's keys. Every key starts with the queue prefix, so
 * with a hash-tag prefix (`{svc}`) the stream, its dedup keys and BullMQ's keys share one Redis
 * Cluster slot and one script may touch them all.
 */
export interface StreamKeys {
  /** The stream the edge appends verified events to and the pump reads. */
  stream: string;
  /** The consumer group the pumps share. */
  group: string;
  /** The edge's "seen" key of an event id; holds the stream entry id of the first copy. */
  seen(eventId: string): string;
}

export function streamKeys(prefix: string): StreamKeys {
  const base = `${prefix}:events`;
  return {
    stream: `${base}:ingest`,
    group: "pump",
    seen: (eventId) => `${base}:seen:${eventId}`,
  };
}
