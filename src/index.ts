/** The library API: build isolated instances of the service or its parts. */
export { loadConfig, ConfigError, type Config } from "./config/index.js";
export { createLogger, type Logger, type LoggerOptions } from "./logging/logger.js";
export { createService, type Service, type ServiceOptions } from "./service.js";
export { createApp, type CreateAppOptions } from "./http/app.js";
export type { WebhookObserver, RejectReason } from "./http/webhook-route.js";
export { createEventProducer, type EventProducer } from "./queue/event-producer.js";
export type { EventJobData, EventSink, EnqueueResult } from "./queue/event-job.js";
export { signPayload, verifySignature, WebhookSignatureError } from "./events/signature.js";
export { parseEnvelope, EnvelopeError, type EventEnvelope } from "./events/envelope.js";
export { eventSchemas, KNOWN_EVENT_TYPES, type AnyEvent, type EventOf, type KnownEventType } from "./events/catalog.js";
export { createHandlerRegistry, type Handler, type HandlerMap, type HandlerRegistry } from "./events/registry.js";
export type { EventHandler, EventHandlers, HandlerContext } from "./worker/handler-context.js";
export { loadHandlersModule, HandlersModuleError } from "./worker/load-handlers-module.js";
export { createRedisMirror } from "./mirror/redis-store.js";
export type { MirrorKind, MirrorRecord, MirrorStore, UpsertResult } from "./mirror/store.js";
export * from "./upstream/index.js";
