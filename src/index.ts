/**
 * The library API: build isolated instances of the service or its parts. Everything public is
 * named here; the zod schemas behind the types stay internal (test/typescript-validate.ts pins this).
 */
export { loadConfig, ConfigError, type Config } from "./config/config.js";
export { createLogger, type Logger, type LoggerOptions } from "./logging/logger.js";
export { createService, type Service, type ServiceOptions } from "./service.js";
export { createApp, type CreateAppOptions } from "./http/app.js";
export type { WebhookObserver, RejectReason } from "./http/webhook-route.js";
export { createEventProducer, type EventProducer, type EventJobData } from "./queue/events-queue.js";
export type { EventSink, EnqueueResult } from "./queue/ingest-stream.js";
export { signPayload, verifySignature, WebhookSignatureError } from "./events/envelope.js";
export { parseEnvelope, EnvelopeError, type EventEnvelope } from "./events/envelope.js";
export { KNOWN_EVENT_TYPES, type AnyEvent, type EventData, type EventOf, type KnownEventType } from "./events/catalog.js";
export {
  matchesChange,
  CHANGE_EVENT_TYPES,
  CHANGE_KINDS,
  CHANGE_SOURCES,
  type ChangeData,
  type ChangeEvent,
  type ChangeEventOf,
  type ChangeEventType,
  type ChangeField,
  type ChangeFilter,
  type ChangeKind,
  type ChangeModels,
  type ChangeSource,
} from "./events/catalog.js";
export { ReservedEventTypeError } from "./events/errors.js";
export {
  createHandlerRegistry,
  type EventFor,
  type HandledType,
  type Handler,
  type HandlerMap,
  type HandlerRegistry,
  type Handlers,
  type NamedHandler,
} from "./events/dispatch.js";
export { onChange, loadHandlersModule, type EventHandler, type EventHandlers, type HandlerContext } from "./worker/handlers.js";
export type { StepFunction } from "./worker/durable-steps.js";
export { StepError, type StepErrorCode, ApiNotConfiguredError, HandlersModuleError } from "./worker/errors.js";
export { createStepStore, type StepRecord, type StepStore } from "./mirror/step-store.js";
export type { WorkerRole, FinishedEvent } from "./worker/worker-role.js";
export { createDatabase, DatabaseConfigError, migrateToLatest, MigrationError } from "./mirror/database.js";
export type { Database, DatabaseOptions } from "./mirror/database.js";
export { MIRROR_KINDS, type MirrorKind } from "./mirror/kinds.js";
export { createPostgresMirror } from "./mirror/mirror-store.js";
export { createEventLog, type EventLog, type EventPage, type EventQuery, type LoggedEvent } from "./mirror/event-log.js";
export type { MirrorChange, MirrorListFilter, MirrorPage, MirrorRecord, MirrorStore, UpsertResult } from "./mirror/mirror-store.js";
export {
  createApiClient,
  type ApiClient,
  type ApiClientOptions,
  type BookingQuery,
  type ListOptions,
  type MenuItemQuery,
  type OrderQuery,
} from "./upstream/client.js";
export { createRateLimiter, BUDGET_CLASSES, type BudgetClass, type RateLimiter, type RateLimiterOptions } from "./upstream/rate-limiter.js";
export { parseApiKey } from "./upstream/client.js";
export { apiKeyId, isApiKey, API_KEY_PREFIX } from "./base/api-key.js";
export { ApiKeyError } from "./upstream/errors.js";
export {
  UpstreamError,
  UpstreamBadRequestError,
  UpstreamAuthError,
  UpstreamNotFoundError,
  UpstreamConflictError,
  UpstreamRateLimitError,
  UpstreamServerError,
  UpstreamTimeoutError,
  UpstreamNetworkError,
  UpstreamResponseError,
  UpstreamPageRefusedError,
  UpstreamRequestError,
  isPermanentUpstreamError,
} from "./upstream/errors.js";
export { ORDER_STATUSES, ORDER_TYPES, SETTABLE_ORDER_STATUSES } from "./upstream/models.js";
export type {
  Booking,
  CreateBookingInput,
  MenuItem,
  Order,
  OrderItem,
  OrderStatus,
  OrderType,
  Page,
  Review,
  SettableOrderStatus,
} from "./upstream/models.js";
