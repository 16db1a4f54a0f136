export {
  createApiClient,
  type ApiClient,
  type ApiClientOptions,
  type BookingQuery,
  type ListOptions,
  type MenuItemQuery,
  type OrderQuery,
  type ReadPage,
} from "./client.js";
export {
  createRateLimiter,
  BUDGET_CLASSES,
  type BudgetClass,
  type OnSlot,
  type RateLimiter,
  type RateLimiterOptions,
  type RateLimitState,
} from "./rate-limiter.js";
export { apiKeyId, isApiKey, parseApiKey, ApiKeyError, API_KEY_PREFIX } from "./api-key.js";
export { parseRetryAfter, backoffMs } from "./retry.js";
export { createListOrder, createWalkBounds, MAX_WALK_PAGES, paginate, paginatePages, readList } from "./paginate.js";
export type { ListDirection, ListOrder, ListWalk, PageAt, PageHandled, WalkEnd, WalkResult } from "./paginate.js";
export { sleep } from "./sleep.js";
export * from "./errors.js";
export * from "./models.js";
