import { isKnownEventType } from "../events/catalog.js";
import type { WebhookObserver } from "../http/webhook-route.js";
import type { Metrics } from "./metrics.js";

/** The edge's observer that counts accepted, deduplicated and refused deliveries. */
export function webhookMetrics(metrics: Metrics): WebhookObserver {
  return {
    accepted({ type, secretIndex, duplicate, enqueueMs }) {
      // Event types are chosen by senders: keep the label set bounded.
      const label = isKnownEventType(type) ? type : "other";
      metrics.eventsReceived.inc({ type: label, secret: String(secretIndex) });
      if (duplicate) metrics.eventsDeduplicated.inc({ type: label });
      metrics.enqueueSeconds.observe(enqueueMs / 1000);
    },
    rejected: (reason) => metrics.eventsRejected.inc({ reason }),
  };
}
