import { createTracing, TRACER_NAME, type Tracing } from "./tracing.js";

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Whether the standard environment asks for traces: an OTLP endpoint (for all signals or for
 * traces), not disabled by OTEL_SDK_DISABLED, and OTEL_TRACES_EXPORTER not "none".
 */
export function tracingRequested(env: Env): boolean {
  // An empty value counts as unset, as the SDK reads it.
  if (!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() && !env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  return !(env.OTEL_TRACES_EXPORTER ?? "").split(",").some((e) => e.trim() === "none");
}

/**
 * Starts the OpenTelemetry Node SDK for traces when the environment asks for them; otherwise
 * loads nothing (the SDK is imported only here, dynamically) and returns undefined.
 *
 * The SDK reads the rest of the standard environment itself: OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by default, http/json,
 * grpc), OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*. No instrumentation is
 * registered (nothing is patched): the service makes its own spans where a delivery goes. Metrics
 * stay Prometheus's and logs stdout's, so the SDK's metric and log pipelines are not started.
 */
export async function startTracing(env: Env): Promise<Tracing | undefined> {
  if (!tracingRequested(env)) return undefined;
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: TRACER_NAME }),
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return createTracing(() => shutdownWithin(sdk.shutdown(), SHUTDOWN_MS));
}

/** How long a stopping process waits to export its last spans: a collector that is away must not hold the exit. */
const SHUTDOWN_MS = 5000;

async function shutdownWithin(shutdown: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([shutdown.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
