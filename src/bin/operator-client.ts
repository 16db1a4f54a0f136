import { connect } from "node:net";
import { CommandError } from "./command-error.js";
import { UsageError } from "./usage-error.js";

/** How long the service may take to accept the connection (a wrong host must not hang the command). */
const CONNECT_TIMEOUT_MS = 2000;
/** How long one request may take in all (a bulk dry run counts the whole log). */
const REQUEST_TIMEOUT_MS = 60_000;

export interface OperatorClient {
  readonly url: string;
  /** One call of the operator API; its JSON answer, or a CommandError with the service's own words. */
  call<T>(method: "GET" | "POST", path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
}

/** The operator API's base URL: --url, else http://127.0.0.1:$PORT (3000). */
export function operatorUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const text = flag ?? `http://127.0.0.1:${env.PORT ?? 3000}`;
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) throw new UsageError(`--url "${text}" is not an http(s) URL`);
  return text.replace(/\/+$/, "");
}

/** Does anything accept a TCP connection there? false when refused (no service); throws when it does not answer at all. */
function listening(url: string): Promise<boolean> {
  const { hostname, port, protocol } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(port || (protocol === "https:" ? 443 : 80)) });
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => {
      socket.destroy();
      reject(new CommandError(`${url} does not answer within ${CONNECT_TIMEOUT_MS / 1000} s; check --url`));
    });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", (err: Error & { code?: string }) => {
      if (err.code === "ECONNREFUSED") resolve(false);
      else reject(new CommandError(`cannot reach ${url} (${err.code ?? err.message}); check --url`));
    });
  });
}

/**
 * The running service's operator API at `url`, or undefined when nothing listens there (the
 * command then opens the stores itself). A service that answers needs ADMIN_TOKEN.
 */
export async function operatorClient(url: string, token: string | undefined): Promise<OperatorClient | undefined> {
  if (!(await listening(url))) return undefined;
  if (!token)
    throw new CommandError(`a service answers at ${url}: set ADMIN_TOKEN to its admin token (or stop it to work on the stores directly)`);
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
        throw new CommandError(`${method} ${url}${path} failed (${cause})`);
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
      throw new CommandError(`${error?.code ?? `HTTP ${res.status}`}: ${error?.message ?? text.slice(0, 200)}`);
    },
  };
}
