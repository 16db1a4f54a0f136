import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { createApp } from "../http/app.js";
import type { AppEnv } from "../http/request-log.js";
import { mountOperatorOff } from "../http/guards.js";
import type { Metrics } from "../metrics/metrics.js";
import { webhookMetrics } from "../metrics/metrics.js";
import type { EventSink as StreamSink } from "../queue/ingest-stream.js";
import type { Tracing } from "../tracing/tracing.js";

/**
 * The service's HTTP app: health and readiness always, the webhook edge where the role has a
 * sink, and the operator's routes (`operator`) only with an ADMIN_TOKEN: nothing is exposed by default.
 */
export function createServiceApp(deps: {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  tracing: Tracing | undefined;
  sink: StreamSink | undefined;
  ready: () => Promise<void>;
  /** Mounts the operator's routes; undefined without an ADMIN_TOKEN. */
  operator: ((root: Hono<AppEnv>) => void) | undefined;
}): Hono<AppEnv> {
  const { config, metrics, tracing, sink } = deps;
  return createApp({
    logger: deps.logger,
    onServerError: (status) => metrics.httpServerErrors.inc({ status: String(status) }),
    ...(tracing ? { tracer: tracing.tracer } : {}),
    ready: deps.ready,
    ...(sink
      ? {
          webhooks: {
            sink,
            signingSecrets: config.signingSecrets,
            maxBodyBytes: config.maxBodyBytes,
            maxBufferedBodyBytes: config.http.maxBufferedBodyBytes,
            observer: webhookMetrics(metrics),
          },
        }
      : {}),
    mount: deps.operator ?? mountOperatorOff,
  });
}
