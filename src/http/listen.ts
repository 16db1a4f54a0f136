import { serve, type ServerType } from "@hono/node-server";
import type { Server } from "node:http";
import type { Hono } from "hono";
import type { AppEnv } from "./context.js";

export interface RunningServer {
  url: string;
  server: ServerType;
  /** Stops accepting, lets in-flight requests finish, then cuts what is left at the deadline. */
  close(deadlineMs: number): Promise<void>;
}

/** Starts the edge on host:port (port 0 picks a free one). */
export function listen(app: Hono<AppEnv>, host: string, port: number): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port }, (info) => {
      // Above the usual 60 s idle timeout of load balancers (fly's proxy, ALB), so they never
      // reuse a socket we are closing.
      const http = server as Server;
      http.keepAliveTimeout = 65_000;
      http.headersTimeout = 66_000;
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
