import { configValue } from "../config/config.js";
import { createLogger } from "../logging/logger.js";
import { createSandboxCompanies } from "../sandbox/companies.js";
import { SANDBOX_RATE_LIMIT, SANDBOX_RESTAURANTS, type Sandbox, type SandboxOptions } from "../sandbox/index.js";
import { API_KEY_PREFIX, isApiKey } from "../base/api-key.js";
import { flagOptions, parseFlags, stopped, UsageError, wholeNumber } from "./command.js";

/** The sandbox's port when --port is not given (dev's first run takes it too). */
export const SANDBOX_PORT = 4010;

/** One simulated change every n ms (--interval-ms, of sandbox and dev): at least 10, SIMULATION_INTERVAL_MS when not given. */
export const SIMULATION_INTERVAL_MS = 1000;
export const simulationInterval = (value: string | undefined) => wholeNumber(value, "--interval-ms", SIMULATION_INTERVAL_MS, 10);

export const help = `svc-webhooks sandbox [options]

A local stand-in for the upstream API (every endpoint of the spec, in memory), which signs and
delivers webhooks with retries and can simulate live traffic.
  --port <n>             default ${SANDBOX_PORT}
  --host <h>             default 127.0.0.1
  --api-key <svc_live_…> the accepted key (default: a generated one, printed)
  --companies <n>        serve n companies on one port, each its own generated key (printed),
                         data (seeds from --seed up), webhooks and rate window; their controls
                         under /_sandbox/companies/{index}/… (default 1)
  --webhook-url <url>    a subscriber endpoint; repeat for several
  --webhook-secret <s>   its signing secret; repeat to pair with each url, or give one for all
  --thin                 send only { id, restaurantId } as event data
  --simulate             move orders through the kitchen, create bookings, reviews, menu edits
  --interval-ms <n>      simulation step (default ${SIMULATION_INTERVAL_MS})
  --rate-max <n>         requests per window per key (default ${SANDBOX_RATE_LIMIT.max})
  --rate-window-ms <n>   rate window (default ${SANDBOX_RATE_LIMIT.windowMs})
  --seed <n>             seed data seed (default 1)
  --orders <n>           seed a company history of n orders (instead of the small sample)
  --days <n>             ... spread over n days ending now (default 365)
  --bookings <n>         ... and n bookings (default orders / 4)
  --restaurants <n>      restaurants (default ${SANDBOX_RESTAURANTS})
  --traffic <events/s>   live traffic of the same shape (new orders through the kitchen, refunds,
                         bookings, menu edits)
  --orders-order <o>     newest-first (default) or oldest-first
  --bookings-order <o>   date-ascending (default) or date-descending`;

export async function run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void> {
  const { values } = parseFlags({
    args: argv,
    strict: true,
    options: {
      ...flagOptions(["port", "host", "api-key", "companies", "interval-ms", "rate-max", "rate-window-ms", "seed", "orders", "days"]),
      ...flagOptions(["bookings", "restaurants", "traffic", "orders-order", "bookings-order"], ["thin", "simulate"]),
      "webhook-url": { type: "string", multiple: true },
      "webhook-secret": { type: "string", multiple: true },
    },
  });
  const urls = values["webhook-url"] ?? [];
  const companies = wholeNumber(values.companies, "--companies", 1, 1);
  // Each company has its own key and endpoints: one given key or endpoint list could not say whose.
  if (companies > 1 && (values["api-key"] !== undefined || urls.length > 0))
    throw new UsageError("--api-key and --webhook-url are for one company; with --companies, POST /_sandbox/companies/{index}/webhooks");
  const secrets = values["webhook-secret"] ?? [];
  if (urls.length > 0 && secrets.length === 0) throw new UsageError("--webhook-url needs --webhook-secret");
  if (secrets.length > 1 && secrets.length !== urls.length)
    throw new UsageError("give one --webhook-secret for all urls, or one per --webhook-url");
  for (const url of urls) if (!URL.canParse(url)) throw new UsageError(`--webhook-url "${url}" is not a URL`);
  const apiKey = values["api-key"];
  if (apiKey !== undefined && !isApiKey(apiKey)) throw new UsageError(`--api-key must be ${API_KEY_PREFIX} followed by the key body`);
  const webhooks = urls.map((url, i) => ({
    url,
    secret: secrets[secrets.length === 1 ? 0 : i] ?? "",
    thin: values.thin ?? false,
  }));

  const ordersOrder = oneOf(values["orders-order"], "--orders-order", ["newest-first", "oldest-first"]);
  const bookingsOrder = oneOf(values["bookings-order"], "--bookings-order", ["date-ascending", "date-descending"]);
  const orders = values.orders === undefined ? undefined : wholeNumber(values.orders, "--orders", 0);
  if (orders === undefined && (values.days !== undefined || values.bookings !== undefined))
    throw new UsageError("--days and --bookings go with --orders");
  const traffic = values.traffic === undefined ? undefined : Number(values.traffic);
  if (traffic !== undefined && !(traffic > 0 && traffic <= 1000))
    throw new UsageError(`--traffic must be a number of events per second above 0 (at most 1000), not "${values.traffic}"`);

  const logger = createLogger({ level: configValue(env, "LOG_LEVEL"), secrets: [...secrets, ...(apiKey ? [apiKey] : [])] });
  const seed = wholeNumber(values.seed, "--seed", 1);
  const company = (index: number): SandboxOptions => ({
    ...(apiKey ? { apiKeys: [apiKey] } : {}),
    webhooks,
    rateLimit: {
      max: wholeNumber(values["rate-max"], "--rate-max", SANDBOX_RATE_LIMIT.max, 1),
      windowMs: wholeNumber(values["rate-window-ms"], "--rate-window-ms", SANDBOX_RATE_LIMIT.windowMs, 1),
    },
    seed: seed + index,
    restaurants: wholeNumber(values.restaurants, "--restaurants", SANDBOX_RESTAURANTS, 1),
    ...(orders === undefined
      ? {}
      : {
          history: {
            orders,
            days: wholeNumber(values.days, "--days", 365, 1),
            ...(values.bookings === undefined ? {} : { bookings: wholeNumber(values.bookings, "--bookings", 0) }),
          },
        }),
    lists: { orders: ordersOrder, bookings: bookingsOrder },
    simulate: values.simulate ? { intervalMs: simulationInterval(values["interval-ms"]) } : false,
    logger,
  });
  const whole = createSandboxCompanies(Array.from({ length: companies }, (_, index) => company(index)));
  const [sandbox] = whole.companies as [Sandbox, ...Sandbox[]];
  if (traffic !== undefined) for (const c of whole.companies) c.startTraffic({ eventsPerSecond: traffic });
  const url = await whole.listen({ port: wholeNumber(values.port, "--port", SANDBOX_PORT), host: values.host ?? "127.0.0.1" });
  const controls = companies === 1 ? "/_sandbox" : "/_sandbox/companies/{index}";
  process.stdout.write(
    [
      `sandbox API      ${url}/api/v1`,
      `API_BASE_URL     ${url}   (what the service expects: without /api/v1)`,
      ...(companies === 1
        ? [`API key          ${apiKey ? "(as given)" : sandbox.apiKey}`]
        : whole.companies.map((c, index) => `API key ${String(index).padEnd(9)}${c.apiKey}   (seed ${seed + index})`)),
      `webhooks         ${urls.length > 0 ? urls.join(", ") : `none (POST ${controls}/webhooks to add one)`}`,
      `simulation       ${values.simulate ? "on" : "off"}`,
      `history          ${orders === undefined ? "small sample" : `${orders} orders, ${sandbox.state.bookings().length} bookings${companies > 1 ? " (company 0; each its own)" : ""}`}`,
      `traffic          ${traffic === undefined ? "off" : `${traffic} events/s`}`,
      "",
      "Point the service (and the CLI) at it with:",
      `  export API_BASE_URL=${url}${apiKey ? "" : ` API_KEY=${sandbox.apiKey}`}`,
      "",
    ].join("\n"),
  );
  await stopped(stop);
  await whole.close();
  logger.flush();
}

/** A flag that takes one of two words: the first when not given. */
function oneOf<const W extends string>(value: string | undefined, flag: string, [first, second]: readonly [W, W]): W {
  if (value === undefined || value === first || value === second) return (value ?? first) as W;
  throw new UsageError(`${flag} must be ${first} or ${second}, not "${value}"`);
}
