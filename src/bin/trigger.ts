import { randomUUID } from "node:crypto";
import { newestSigningSecret, schemeSecretProblem, SIGNATURE_SCHEMES, type SignatureScheme } from "../config/config.js";
import { DEFAULTS } from "../config/defaults.js";
import { KNOWN_EVENT_TYPES } from "../events/catalog.js";
import { signDelivery } from "../events/signature-schemes.js";
import { printable } from "../base/text.js";
import { newEventId } from "../sandbox/webhook-sender.js";
import { type Answer, answer, causeCode, CommandError, flagOptions, parseFlags, UsageError } from "./command.js";

export const help = `svc-webhooks trigger <event-type> [--url <url>] [--secret <s>] [--scheme svc|standard-webhooks] [--data '<json>'] [--id <event-id>]

Sends a signed sample event of that type, like \`stripe trigger\`:
  --url      where to POST (default http://127.0.0.1:$PORT/webhooks, PORT default ${DEFAULTS.port})
  --secret   signing secret (default: the first of SIGNING_SECRET)
  --scheme   how to sign: svc (X-SVC-Signature) or standard-webhooks (webhook-id/-timestamp/-signature,
             a whsec_ secret); default SIGNATURE_SCHEME, else svc
  --data     JSON object merged into the sample's data, e.g. '{"id":"ord_1","restaurantId":"rest_2"}'
  --id       the event id (default: a new evt_… id)
Types: ${KNOWN_EVENT_TYPES.join(", ")}.`;

/** How long the endpoint may take to answer (a wrong host must not hang the command). */
const SEND_TIMEOUT_MS = 10_000;

const now = () => new Date().toISOString();
const SAMPLES: Record<string, () => Record<string, unknown>> = {
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
    options: flagOptions(["url", "secret", "scheme", "data", "id"]),
  });
  const [type, ...extra] = positionals;
  if (!type || extra.length > 0) throw new UsageError(`trigger takes one event type\n\n${help}`);
  // A misspelt type would be accepted and routed to no handler: a test event that tests nothing.
  if (!(KNOWN_EVENT_TYPES as readonly string[]).includes(type))
    throw new UsageError(`unknown event type "${type}"; known types: ${KNOWN_EVENT_TYPES.join(", ")}`);
  const secret = values.secret ?? newestSigningSecret(env.SIGNING_SECRET);
  if (!secret) throw new UsageError("no signing secret: pass --secret or set SIGNING_SECRET");
  const scheme = (values.scheme ?? env.SIGNATURE_SCHEME ?? "svc") as SignatureScheme;
  if (!SIGNATURE_SCHEMES.includes(scheme)) throw new UsageError(`--scheme must be one of ${SIGNATURE_SCHEMES.join(", ")}`);
  const secretProblem = schemeSecretProblem(scheme, secret);
  if (secretProblem) throw new UsageError(`the signing secret cannot sign as ${scheme}: ${secretProblem}`);
  // Text that is no JSON comes back as a string (safeJson): not an object either.
  const overrides = values.data === undefined ? {} : safeJson(values.data);
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) throw new UsageError("--data must be a JSON object");
  const url = values.url ?? `http://127.0.0.1:${env.PORT ?? DEFAULTS.port}/webhooks`;
  if (!URL.canParse(url)) throw new UsageError(`--url "${url}" is not a URL`);

  const event = {
    id: values.id ?? newEventId(),
    type,
    createdAt: now(),
    data: { ...(SAMPLES[type]?.() ?? {}), ...overrides },
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
    { sent: event, status: res.status, answer: safeJson(text) },
    `sent ${type} ${event.id} to ${url}: ${res.status}${res.ok ? "" : ` ${printable(text.slice(0, 200))}`}`,
  );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
