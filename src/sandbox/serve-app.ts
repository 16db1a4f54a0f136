import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";

/** `app` listening on `host:port` (0: any free port), its URL, and a close that drops open connections. */
export function serveApp(app: Hono, port: number, host: string): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info) => {
      resolve({
        url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${info.port}`,
        close: () =>
          new Promise<void>((closed) => {
            const s = server as Server;
            s.close(() => closed());
            s.closeAllConnections();
          }),
      });
    });
    server.once("error", reject);
  });
}
