import { CommandError } from "./command-error.js";
import { UsageError } from "./usage-error.js";

/** How long one request may take in all (a bulk dry run counts the whole log). */
const REQUEST_TIMEOUT_MS = 60_000;

export interface OperatorClient {
  readonly url: string;
  /** One call of the operator API; its JSON answer, or a CommandError with the service's own words. */
  call<T>(method: "GET" | "POST", path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
}

/** The operator API's base URL as --url gives it, checked. */
export function operatorUrl(flag: string): string {
  if (!URL.canParse(flag) || !/^https?:$/.test(new URL(flag).protocol)) throw new UsageError(`--url "${flag}" is not an http(s) URL`);
  return flag.replace(/\/+$/, "");
}

/** The operator API of the service at `url` (--url: a remote deployment), called with ADMIN_TOKEN. */
export function operatorClient(url: string, token: string | undefined): OperatorClient {
  if (!token) throw new CommandError(`--url calls the service's operator API: set ADMIN_TOKEN to its admin token`);
  return {
    url,
    async call<T>(method: "GET" | "POST", path: string, body?: unknown, headers: Record<string, string> = {}) {
      let res: Response;
      try {
        res = await fetch(`${url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
      } catch (err) {
        const cause = (err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
        throw new CommandError(`${method} ${url}${path} failed (${cause}); check --url`);
      }
      const text = await res.text();
      let answer: unknown;
      try {
        answer = JSON.parse(text);
      } catch {
        throw new CommandError(`${url} answered ${res.status} without JSON: is it svc-webhooks? check --url`);
      }
      if (res.ok) return answer as T;
      const error = (answer as { error?: { code?: string; message?: string } }).error;
      if (res.status === 401) throw new CommandError(`${url} refused ADMIN_TOKEN (401): use the service's admin token`);
      if (res.status === 404 && error?.code === "not_found" && error.message?.startsWith("no route"))
        throw new CommandError(`${url} has no operator API (${path}): is ADMIN_TOKEN set on the service, and is it svc-webhooks?`);
      throw new CommandError(`${error?.code ?? `HTTP ${res.status}`}: ${error?.message ?? text.slice(0, 200)}`, error?.code);
    },
  };
}
