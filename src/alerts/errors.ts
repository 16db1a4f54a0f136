import { codedError } from "../errors.js";

// The alerts' errors (src/alerts): one registry for the layer, as every layer keeps its own.

/** A destination did not take a notification (a status that is not 2xx, a network error, a timeout): the job retries. */
export class AlertDeliveryError extends codedError("alert_not_delivered") {}
