import { Hono } from "hono";
import { expectDefined } from "../errors.js";
import { bearerKey, errorAnswer, unauthorized } from "./app.js";
import { createSandbox, serveApp, type Sandbox, type SandboxOptions } from "./index.js";
import { SandboxError } from "./records.js";

/**
 * Several companies behind one sandbox server, as the upstream serves them: each entry is one
 * company built by `createSandbox` (its own keys, seeded data, webhook endpoints and signing, rate
 * window, faults and request log), and the shared server sends each `/api/v1` request to the
 * company its API key belongs to (spec part 5: a key is scoped to one company). An unknown key is
 * the API's usual 401. Controls: `/_sandbox/companies/{index}/…` reaches one company's
 * `/_sandbox/…`; the plain `/_sandbox/…` routes still work when there is one company only.
 * A company without a `seed` takes its position plus one, so companies differ by default while
 * the first keeps the single sandbox's data; restaurant ids (`rest_1`, …) repeat across companies.
 */
export function createSandboxCompanies(options: readonly SandboxOptions[]) {
  checkApart(options);
  const companies: Sandbox[] = options.map((company, index) => createSandbox({ ...company, seed: company.seed ?? index + 1 }));
  const first = expectDefined(companies[0], "checkApart: at least one company");
  const byKey = new Map(companies.flatMap((company) => company.acceptedKeys.map((key) => [key, company] as const)));
  const app = new Hono();
  app.all("*", (c) => {
    const path = c.req.path;
    if (path === "/api/v1" || path.startsWith("/api/v1/")) {
      const key = bearerKey(c.req.header("authorization"));
      const company = key === undefined ? undefined : byKey.get(key);
      return company ? company.app.fetch(c.req.raw, c.env) : errorAnswer(c, unauthorized());
    }
    const picked = /^\/_sandbox\/companies\/(\d+)(\/.*)?$/.exec(path);
    if (picked) {
      const company = companies[Number(picked[1])];
      if (!company) return errorAnswer(c, new SandboxError(404, "not_found", `companies are 0 to ${companies.length - 1}`));
      const url = new URL(c.req.url);
      url.pathname = `/_sandbox${picked[2] ?? ""}`;
      return company.app.fetch(new Request(url, c.req.raw), c.env);
    }
    if (companies.length > 1 && (path === "/_sandbox" || path.startsWith("/_sandbox/")))
      return errorAnswer(
        c,
        new SandboxError(
          400,
          "invalid_request",
          `this sandbox serves ${companies.length} companies: use /_sandbox/companies/{index}${path.slice("/_sandbox".length)}`,
        ),
      );
    // Everything else answers as one company's app does (its 404 for an unknown path).
    return first.app.fetch(c.req.raw, c.env);
  });

  let server: Awaited<ReturnType<typeof serveApp>> | undefined;
  let closed = false;
  const whole = {
    app,
    companies,
    url: undefined as string | undefined,
    /** Serves every company on one port; each company's `url` is then that server's. */
    async listen({ port = 0, host = "127.0.0.1" }: { port?: number; host?: string } = {}): Promise<string> {
      server = await serveApp(app, port, host);
      whole.url = server.url;
      for (const company of companies) company.url = server.url;
      return server.url;
    },
    async close() {
      if (closed) return;
      closed = true;
      await server?.close();
      await Promise.all(companies.map((company) => company.close()));
    },
  };
  return whole;
}

export type SandboxCompanies = ReturnType<typeof createSandboxCompanies>;

/**
 * Refuses, before any company starts, what two companies cannot share: an API key (it could not
 * pick one company) or a `keep` dir (each would overwrite the other's saved records).
 */
function checkApart(options: readonly SandboxOptions[]): void {
  if (options.length === 0) throw new SandboxError(400, "invalid_request", "a sandbox serves at least one company");
  const keys = options.flatMap((o) => [...new Set([...(o.apiKeys ?? []), ...(o.unmeteredKeys ?? [])])]);
  if (new Set(keys).size !== keys.length) throw new SandboxError(400, "invalid_request", "an API key belongs to one company only");
  const dirs = options.flatMap((o) => (o.keep ? [o.keep.dir] : []));
  if (new Set(dirs).size !== dirs.length) throw new SandboxError(400, "invalid_request", "each company keeps its own keep.dir");
}
