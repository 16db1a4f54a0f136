import { randomUUID } from "node:crypto";
import { configValue, newestSigningSecret, schemeSecretProblem, SIGNATURE_SCHEMES, type SignatureScheme } from "../config/config.js";
import { DEFAULTS } from "../config/defaults.js";
import { isKnownEventType, KNOWN_EVENT_TYPES, type KnownEventType } from "../events/catalog.js";
import { signDelivery } from "../events/signature-schemes.js";
import { printable } from "../base/text.js";
import { newEventId } from "../sandbox/webhook-sender.js";
import { type Answer, answer, causeCode, CommandError, flagOptions, parsedJson, parseFlags, UsageError } from "./command.js";
import { triggerThroughSandbox } from "./trigger-sandbox.js";

export const help = `svc-webhooks trigger <event-type> [--data '<json>'] [--sandbox <url> | --direct [--url <url>] [--secret <s>] [--scheme svc|standard-webhooks] [--id <event-id>]]

Makes an event of that type happen, like \`stripe trigger\`. Two ways:
  through a sandbox (SANDBOX_URL, or --sandbox; \`npm run dev\`'s export block sets it): the sandbox
             makes the change (a new order, a refund, …) and delivers its signed webhook to its
             subscribers, so the record the event names exists upstream. A type that changes a
             record acts on the one --data names by "id", else creates one first (an order to
             move or refund, a booking to cancel; menu_item.updated takes an existing item)
  direct (no sandbox named, or --direct): signs a sample event and POSTs it to the service; the
             ids it names (ord_1, …) need not exist upstream
  --data     JSON object: the sandbox action's input (e.g. '{"id":"ord_…","status":"READY"}',
             '{"restaurantId":"rest_2"}'), or merged into the direct sample's data
  --sandbox  the sandbox's URL, as API_BASE_URL names it (default SANDBOX_URL); never guessed from a port
  --direct   send a signed sample even when SANDBOX_URL is set
Only with a direct send:
  --url      where to POST (default http://127.0.0.1:$PORT/webhooks, PORT default ${DEFAULTS.port})
  --secret   signing secret (default: the first of SIGNING_SECRET)
  --scheme   how to sign: svc (X-SVC-Signature) or standard-webhooks (webhook-id/-timestamp/-signature,
             a whsec_ secret); default SIGNATURE_SCHEME, else svc
  --id       the event id (default: a new evt_… id)
Types: ${KNOWN_EVENT_TYPES.join(", ")}.`;

/** How long the endpoint may take to answer (a wrong host must not hang the command). */
const SEND_TIMEOUT_MS = 10_000;

const now = () => new Date().toISOString();
const SAMPLES: Record<KnownEventType, () => Record<string, unknown>> = {
  "order.created": () => ({
    id: `ord_${randomUUID().slice(0, 8)}`,
    restaurantId: "rest_1",
    status: "PENDING",
    type: "TAKEAWAY",
    total: 23.1,
    currency: "EUR",
    createdAt: now(),
  }),
  "order.status_changed": () => ({ id: "ord_1", restaurantId: "rest_1", status: "PREPARING" }),
  "order.refunded": () => ({ id: "ord_1", restaurantId: "rest_1", status: "REFUNDED", refundedAt: now() }),
  "booking.created": () => ({
    id: `bk_${randomUUID().slice(0, 8)}`,
    restaurantId: "rest_1",
    date: now().slice(0, 10) + "T00:00:00.000Z",
    time: "19:30",
    partySize: 2,
    status: "CONFIRMED",
  }),
  "booking.status_changed": () => ({ id: "bk_1", restaurantId: "rest_1", status: "CANCELLED" }),
  "review.created": () => ({
    id: `rev_${randomUUID().slice(0, 8)}`,
    restaurantId: "rest_1",
    rating: 5,
    comment: "Sent by svc-webhooks trigger",
    author: "trigger",
    createdAt: now(),
  }),
  "menu_item.updated": () => ({ id: "mi_1", restaurantId: "rest_1", price: 12.5, stock: 4 }),
};

export const answers = true;

export async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: flagOptions(["url", "secret", "scheme", "data", "id", "sandbox"], ["direct"]),
  });
  const [type, ...extra] = positionals;
  if (!type || extra.length > 0) throw new UsageError(`trigger takes one event type\n\n${help}`);
  // A misspelt type would be accepted and routed to no handler: a test event that tests nothing.
  if (!isKnownEventType(type)) throw new UsageError(`unknown event type "${type}"; known types: ${KNOWN_EVENT_TYPES.join(", ")}`);
  // Text that is no JSON comes back as a string: not an object either.
  const data = values.data === undefined ? {} : parsedJson(values.data, values.data);
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new UsageError("--data must be a JSON object");
  const sandbox = sandboxUrl(values, env);
  const fields = data as Record<string, unknown>;
  return sandbox === undefined ? sendDirect(type, fields, values, env) : triggerThroughSandbox(sandbox, type, fields);
}

/** The flags the two ways read (--data apart). */
type Flags = Partial<Record<"url" | "secret" | "scheme" | "id" | "sandbox", string>> & { direct?: boolean };

/** The flags only a direct send reads: the sandbox signs and addresses its own deliveries. */
const DIRECT_ONLY = ["url", "secret", "scheme", "id"] as const;

/**
 * The sandbox to act through: --sandbox, else SANDBOX_URL, unless --direct; undefined for a direct
 * send. Only what the user named: the CLI acts on the deployment its environment names, never on
 * whatever answers on a port.
 */
function sandboxUrl(values: Flags, env: NodeJS.ProcessEnv): string | undefined {
  if (values.direct) {
    if (values.sandbox !== undefined) throw new UsageError("--direct sends a signed sample itself: it takes no --sandbox");
    return undefined;
  }
  const [url, source] = values.sandbox !== undefined ? [values.sandbox, "--sandbox"] : [env.SANDBOX_URL, "SANDBOX_URL"];
  // An empty SANDBOX_URL (`export SANDBOX_URL=`) names no sandbox, as an unset one.
  if (url === undefined || (url === "" && source === "SANDBOX_URL")) return undefined;
  if (!URL.canParse(url)) throw new UsageError(`${source} "${url}" is not a URL`);
  const given = DIRECT_ONLY.filter((flag) => values[flag] !== undefined);
  if (given.length > 0)
    throw new UsageError(
      `${given.map((flag) => `--${flag}`).join(", ")} ${given.length === 1 ? "is" : "are"} for a direct send; through the sandbox (${source}) the sandbox signs and delivers. Add --direct to send a signed sample yourself`,
    );
  return url.replace(/\/+$/, "");
}

/** Signs a sample event of `type` (with `overrides` merged into its data) and POSTs it to the service. */
async function sendDirect(
  type: KnownEventType,
  overrides: Record<string, unknown>,
  values: Flags,
  env: NodeJS.ProcessEnv,
): Promise<Answer> {
  const secret = values.secret ?? newestSigningSecret(env.SIGNING_SECRET);
  if (!secret) throw new UsageError("no signing secret: pass --secret or set SIGNING_SECRET");
  const scheme = (values.scheme ?? configValue(env, "SIGNATURE_SCHEME")) as SignatureScheme;
  if (!SIGNATURE_SCHEMES.includes(scheme)) throw new UsageError(`--scheme must be one of ${SIGNATURE_SCHEMES.join(", ")}`);
  const secretProblem = schemeSecretProblem(scheme, secret);
  if (secretProblem) throw new UsageError(`the signing secret cannot sign as ${scheme}: ${secretProblem}`);
  const url = values.url ?? `http://127.0.0.1:${configValue(env, "PORT")}/webhooks`;
  if (!URL.canParse(url)) throw new UsageError(`--url "${url}" is not a URL`);

  const event = {
    id: values.id ?? newEventId(),
    type,
    createdAt: now(),
    data: { ...SAMPLES[type](), ...overrides },
  };
  const body = JSON.stringify(event);
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", ...signDelivery(scheme, secret, event.id, body) },
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
  } catch (err) {
    throw new CommandError(
      `POST ${url} failed (${causeCode(err) ?? (err as Error).name}): is the service running there? Pass --url, or set PORT`,
    );
  }
  const text = await res.text();
  if (!res.ok) process.exitCode = 1;
  return answer(
    { sent: event, status: res.status, answer: parsedJson(text, text) },
    `sent ${type} ${event.id} to ${url}: ${res.status}${res.ok ? "" : ` ${printable(text.slice(0, 200))}`}`,
  );
}
