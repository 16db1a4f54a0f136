import { OpenApiGeneratorV31, OpenAPIRegistry, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { Hono } from "hono";
import * as z from "zod";
import { MIRROR_KINDS, type MirrorKind } from "../mirror/kinds.js";
import { METRICS_PATH } from "./operator-routes.js";
import * as S from "./operator-schemas.js";
import type { AppEnv } from "./request-log.js";

// The operator API's OpenAPI 3.1 document: a table of its routes (method, path, auth, what each
// takes and answers, which refusals it gives), every shape taken from operator-schemas.ts, turned
// into the document by @asteasolutions/zod-to-openapi. Served at GET /openapi.json (no token) and
// committed as docs/openapi.json (`npm run openapi`; a test keeps it current).
//
// Why this library: it reads zod 4's schemas and their `.meta()` (peer zod ^4; no patching of
// zod), writes OpenAPI 3.1 with named components, parameters from zod objects and security
// schemes, and leaves the Hono routes as they are: the table lives beside them, where a route
// added in operator-routes.ts is caught by the test that compares the app's routes with this
// document. hono-openapi and @hono/zod-openapi describe each route where it is registered, which
// would rewrite every operator route (and every parallel change to them); zod's own
// `z.toJSONSchema` makes schemas only, leaving the paths, parameters and references to write by hand.

/** Where the document is served. */
export const OPENAPI_PATH = "/openapi.json";

/** The operator API's version (the document's `info.version`): raised when an answer changes incompatibly. */
const API_VERSION = "1.0.0";

/** A refusal a route may give: its status and the codes that come with it. */
type Refusals = Partial<Record<400 | 404 | 409 | 422 | 503, string>>;

interface OperatorRoute {
  method: "get" | "post" | "delete";
  /** OpenAPI's form: /events/{id}. */
  path: string;
  summary: string;
  /** Readable without the operator token (health, this document). */
  public?: true;
  params?: z.ZodObject;
  query?: z.ZodObject;
  headers?: z.ZodObject;
  body?: z.ZodType;
  /** Success answers by status: a JSON schema, or a text type (the metrics). */
  answers: Record<number, { description: string; json?: z.ZodType; text?: string }>;
  refusals?: Refusals;
}

const json = (description: string, schema: z.ZodType) => ({ description, json: schema });
const Id = z.strictObject({ id: z.string() });
const READ_TIMEOUT = "query_timeout: the read ran past OPERATOR_QUERY_TIMEOUT_MS";
const NOT_REGISTERED = "account_not_found: no such registered account";

/** The routes of one mirror kind: its list, one record, its story and its refresh (`synced`: read from the API, else refused). */
function kindRoutes(kind: MirrorKind, synced: boolean): OperatorRoute[] {
  return [
    {
      method: "get",
      path: `/mirror/${kind}`,
      summary: `One page of the mirror's ${kind}, in id order`,
      query: S.MirrorListQuery,
      answers: { 200: json(`${kind} in id order`, S.mirrorPage(kind)) },
      refusals: { 400: "invalid_filter: an unknown parameter or a bad value (named)", 503: READ_TIMEOUT },
    },
    {
      method: "get",
      path: `/mirror/${kind}/{id}`,
      summary: `One of the mirror's ${kind}`,
      params: Id,
      query: S.AccountQuery,
      answers: { 200: json("the record as the API gave it", S.MIRROR_RECORDS[kind]) },
      refusals: { 400: "invalid_filter: an id no record can have", 404: "not_found: the mirror holds no such record", 503: READ_TIMEOUT },
    },
    {
      method: "get",
      path: `/records/${kind}/{id}`,
      summary: `A record's story: the mirror's copy and every event naming it, newest first`,
      params: Id,
      query: S.RecordQuery,
      answers: { 200: json("the record's story", S.recordStory(kind)) },
      refusals: {
        400: "invalid_filter: a bad id or cursor, or a parameter other than cursor and account",
        404: "not_found: neither the mirror nor the event log knows it",
        503: READ_TIMEOUT,
      },
    },
    {
      method: "post",
      path: `/records/${kind}/{id}/refresh`,
      summary: "Read the record from the API now",
      params: Id,
      query: S.AccountQuery,
      body: z.strictObject({}),
      ...(synced
        ? {
            answers: { 202: json("the read is scheduled", S.RefreshQueued) },
            refusals: {
              404: `record_not_found: nothing names it (no restaurant to read); ${NOT_REGISTERED}`,
              409: "sync_unavailable: no API configured",
            },
          }
        : { answers: {}, refusals: { 400: `invalid_request: ${kind} are stored as delivered; the API has no endpoint to read them` } }),
    },
  ];
}

/** What the document depends on besides the routes' shapes. */
export interface OperatorApiFacts {
  /** The kinds the sync reads from the API (sync/resources.ts' SYNCED_KINDS): the others' refresh is refused. */
  syncedKinds: readonly string[];
}

/** The probes, the document itself, the event log, replays and sync requests. */
const LOG_ROUTES: readonly OperatorRoute[] = [
  {
    method: "get",
    path: "/healthz",
    summary: "The process is alive",
    public: true,
    answers: { 200: json("alive", S.Alive) },
  },
  {
    method: "get",
    path: "/readyz",
    summary: "Redis answers, so events can be accepted",
    public: true,
    answers: { 200: json("ready", S.Ready) },
    refusals: { 503: "not_ready: what is not ready (never a host)" },
  },
  {
    method: "get",
    path: OPENAPI_PATH,
    summary: "This document",
    public: true,
    answers: { 200: json("the operator API's OpenAPI 3.1 document", z.record(z.string(), z.unknown())) },
  },
  {
    method: "get",
    path: "/events",
    summary: "One page of the event log: summaries without payloads",
    query: S.EventListQuery,
    answers: { 200: json("a page of summaries", S.EventPage) },
    refusals: { 400: "invalid_filter: an unknown parameter or a bad value (named)", 503: READ_TIMEOUT },
  },
  {
    method: "get",
    path: "/events/{id}",
    summary: "One event whole: payload, errors, every kept attempt, durable steps",
    params: Id,
    query: S.AccountQuery,
    answers: { 200: json("the event", S.EventDetail) },
    refusals: { 400: "invalid_event_id: an id no event can have", 404: "not_found: no such event in the log", 503: READ_TIMEOUT },
  },
  {
    method: "post",
    path: "/events/{id}/replay",
    summary: "Replay one event: every handler, or one",
    params: Id,
    query: S.AccountQuery,
    headers: S.IdempotencyHeaders,
    body: S.ReplayOneBody,
    answers: { 202: json("queued (asked again while it waits: the same replay)", S.ReplayStarted) },
    refusals: {
      400: "invalid_request: a bad body or Idempotency-Key; unknown_handler (lists the type's keys); invalid_event_id",
      404: "event_not_found",
      422: "idempotency_key_reused: the key was sent before with another event or handler",
    },
  },
  {
    method: "post",
    path: "/events/replay",
    summary: "Replay every event matching a filter (a bulk replay), or count them",
    query: S.AccountQuery,
    headers: S.IdempotencyHeaders,
    body: S.ReplayManyBody,
    answers: { 200: json("dryRun: the count", S.BulkCount), 202: json("started: the count, then its id", S.BulkStarted) },
    refusals: {
      400: "invalid_request: no filter field and no all; invalid_filter: a bad filter value (named)",
      409: "confirm_required: more than BULK_REPLAY_CONFIRM_ABOVE events, or confirm is not the count now; replay_running: the same filter runs",
      422: "idempotency_key_reused: the key was sent before with another filter or fresh",
    },
  },
  {
    method: "get",
    path: "/events/replays/{id}",
    summary: "A bulk replay's progress",
    params: Id,
    answers: { 200: json("its progress", S.BulkProgress) },
    refusals: { 404: "replay_not_found: unknown, or older than 7 days" },
  },
  {
    method: "delete",
    path: "/events/replays/{id}",
    summary: "Cancel a bulk replay: nothing more is queued, its unstarted jobs are withdrawn",
    params: Id,
    answers: { 200: json("its progress (state cancelled; one that ended is answered as it is)", S.BulkProgress) },
    refusals: { 404: "replay_not_found" },
  },
  {
    method: "post",
    path: "/sync/reconcile",
    summary: "An active reconciliation pass now",
    query: S.AccountQuery,
    body: S.SyncBodies.reconcile,
    answers: { 202: json("queued (asked again: the same job)", S.SyncQueued) },
    refusals: { 400: "invalid_request", 404: NOT_REGISTERED, 409: "sync_unavailable: no API configured" },
  },
  {
    method: "post",
    path: "/sync/backfill",
    summary: "The resumable backfill, as a worker job",
    query: S.AccountQuery,
    body: S.SyncBodies.backfill,
    answers: { 202: json("queued (asked again: the same job)", S.SyncQueued) },
    refusals: { 400: "invalid_request: bad kinds or since", 404: NOT_REGISTERED, 409: "sync_unavailable: no API configured" },
  },
];

/** The accounts, the problems and the metrics. */
const SERVICE_ROUTES: readonly OperatorRoute[] = [
  {
    method: "get",
    path: "/accounts",
    summary: "The registered accounts with their sync's state (never a key or a secret)",
    answers: { 200: json("every registered account", S.AccountList) },
  },
  {
    method: "post",
    path: "/accounts",
    summary: "Register an account",
    body: S.NewAccountBody,
    answers: { 201: json("registered", S.AccountChange) },
    refusals: {
      400: "invalid_account: a malformed or unknown field (named, never echoed); secrets_key_missing",
      409: "account_exists",
      503: "accounts_unavailable",
    },
  },
  {
    method: "get",
    path: "/accounts/{id}",
    summary: "One account's health: its sync, its key's budget, its pending refreshes",
    params: Id,
    answers: { 200: json("the account", S.AccountHealth) },
    refusals: { 404: "account_not_found" },
  },
  {
    method: "post",
    path: "/accounts/{id}/rotate",
    summary: "Add a signing secret, retire the old ones, or replace the API key",
    params: Id,
    body: S.RotationBody,
    answers: { 200: json("the account after the change", S.AccountChange) },
    refusals: { 400: "invalid_account; secrets_key_missing", 404: "account_not_found" },
  },
  {
    method: "delete",
    path: "/accounts/{id}",
    summary: "Remove an account: its endpoint and sync stop at once",
    params: Id,
    query: S.RemoveQuery,
    answers: { 200: json("removed", S.AccountRemoved) },
    refusals: { 400: "invalid_request: purge takes true or false", 404: "account_not_found" },
  },
  {
    method: "get",
    path: "/problems",
    summary: "Problems: each reason the mirror or a handler cannot be right, with its cause and account",
    query: S.ProblemsQuery,
    answers: { 200: json("the problems, every account's when none is named", S.ProblemList) },
    refusals: { 400: "invalid_filter: a bad state, kind or account" },
  },
  {
    method: "get",
    path: METRICS_PATH,
    summary: "Prometheus text of the service's metrics",
    answers: { 200: { description: "Prometheus exposition format", text: "text/plain" } },
  },
];

/** Every route of the operator API (and the health probes), as the document describes them. */
export const operatorRoutes = ({ syncedKinds }: OperatorApiFacts): OperatorRoute[] => [
  ...LOG_ROUTES,
  ...MIRROR_KINDS.flatMap((kind) => kindRoutes(kind, syncedKinds.includes(kind))),
  ...SERVICE_ROUTES,
];

const errorAnswer = (description: string) => ({ description, content: { "application/json": { schema: S.ErrorBody } } });

/** A route's entry as the library takes it: its own answers and refusals, and those its guards add. */
function routeConfig(route: OperatorRoute): RouteConfig {
  const responses: RouteConfig["responses"] = {};
  for (const [status, answer] of Object.entries(route.answers))
    responses[status] = {
      description: answer.description,
      content: answer.json ? { "application/json": { schema: answer.json } } : { [answer.text ?? "text/plain"]: { schema: z.string() } },
    };
  for (const [status, codes] of Object.entries(route.refusals ?? {})) responses[status] = errorAnswer(codes);
  if (!route.public) responses["401"] = errorAnswer("unauthorized: no valid operator token");
  if (route.method !== "get") {
    responses["403"] = errorAnswer("cross_origin_request: a browser's request from another origin");
    responses["415"] = errorAnswer("unsupported_media_type: a body that is not application/json");
  }
  return {
    method: route.method,
    path: route.path,
    summary: route.summary,
    ...(route.public ? { security: [] } : {}),
    request: {
      ...(route.params ? { params: route.params } : {}),
      ...(route.query ? { query: route.query } : {}),
      ...(route.headers ? { headers: route.headers } : {}),
      ...(route.body ? { body: { required: false, content: { "application/json": { schema: route.body } } } } : {}),
    },
    responses,
  };
}

/** The document, built from the route table. */
export function operatorApiDocument(facts: OperatorApiFacts): ReturnType<OpenApiGeneratorV31["generateDocument"]> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "adminToken", {
    type: "http",
    scheme: "bearer",
    description: "ADMIN_TOKEN, the operator token: `Authorization: Bearer <token>`",
  });
  registry.registerComponent("securitySchemes", "adminBasic", {
    type: "http",
    scheme: "basic",
    description: "Basic auth with ADMIN_TOKEN as the password (any user name), for a browser",
  });
  for (const route of operatorRoutes(facts)) registry.registerPath(routeConfig(route));
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "svc-webhooks operator API",
      version: API_VERSION,
      description:
        "The operator API of svc-webhooks: the event log, replays, the mirror and records' stories, sync requests, accounts, " +
        "problems and health. Every route but the health probes and this document takes the operator token (ADMIN_TOKEN). " +
        "A write (POST, DELETE) from a browser must come from the service's own origin, with a JSON body. " +
        'Every refusal is `{"error": {"code", "message"}}`. See docs/operations.md.',
    },
    security: [{ adminToken: [] }, { adminBasic: [] }],
  });
}

/** GET /openapi.json: the document, built once, readable without a token (the routes it describes keep theirs). */
export function mountOpenApi(app: Hono<AppEnv>, facts: OperatorApiFacts): void {
  let document: string | undefined;
  app.get(OPENAPI_PATH, (c) => {
    document ??= JSON.stringify(operatorApiDocument(facts));
    return c.body(document, 200, { "Content-Type": "application/json" });
  });
}
