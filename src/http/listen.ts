import { serve, type ServerType } from "@hono/node-server";
import type { Server } from "node:http";
import type { Hono } from "hono";
import type { HttpLimits } from "../config/config.js";
import { DEFAULTS } from "../config/defaults.js";
import type { AppEnv } from "./context.js";

export const DEFAULT_HTTP_LIMITS: Omit<HttpLimits, "maxBufferedBodyBytes"> = {
  requestTimeoutMs: DEFAULTS.httpRequestTimeoutMs,
  headersTimeoutMs: DEFAULTS.httpHeadersTimeoutMs,
  keepAliveTimeoutMs: DEFAULTS.httpKeepAliveTimeoutMs,
  maxConnections: DEFAULTS.httpMaxConnections,
  maxHeaderBytes: DEFAULTS.httpMaxHeaderBytes,
};

export interface RunningServer {
  url: string;
  server: ServerType;
  /** Stops accepting, lets in-flight requests finish, then cuts what is left at the deadline. */
  close(deadlineMs: number): Promise<void>;
}

/**
 * Starts the edge on host:port (port 0 picks a free one), bounding what a client may hold: header
 * and request time (408 and close past them), header size (431), open connections.
 */
export function listen(app: Hono<AppEnv>, host: string, port: number, limits = DEFAULT_HTTP_LIMITS): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const serverOptions = {
      requestTimeout: limits.requestTimeoutMs,
      // Since Node 18 the header timer runs from a request's first byte, so an idle keep-alive
      // socket is not cut by it (checked by test/integration/edge-limits): it may be shorter than
      // keepAliveTimeout, which stays above load balancers' 60 s idle timeout.
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // Node checks the two timeouts only this often (30 s by default): a fraction of the shorter.
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    };
    const server = serve({ fetch: app.fetch, hostname: host, port, serverOptions }, (info) => {
      const http = server as Server;
      http.maxConnections = limits.maxConnections;
      const shownHost = host.includes(":") ? `[${host}]` : host;
      resolve({
        url: `http://${shownHost === "0.0.0.0" ? "127.0.0.1" : shownHost}:${info.port}`,
        server,
        close: (deadlineMs) =>
          new Promise<void>((done) => {
            const cut = setTimeout(() => http.closeAllConnections(), deadlineMs);
            // A keep-alive socket goes idle once its in-flight response is sent and would then
            // hold close() open until the client drops it: close idle sockets as they appear.
            const sweep = setInterval(() => http.closeIdleConnections(), 50);
            http.close(() => {
              clearTimeout(cut);
              clearInterval(sweep);
              done();
            });
            http.closeIdleConnections();
          }),
      });
    });
    server.once("error", reject);
  });
}
