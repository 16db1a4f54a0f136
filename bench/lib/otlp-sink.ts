import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local OTLP/HTTP endpoint that reads and drops every export, so the tracing-on row measures
 * what tracing costs the edge (spans, context, batching, encoding, sending), not a collector.
 */
export async function startOtlpSink(): Promise<{ url: string; exports: () => number; close(): Promise<void> }> {
  let exports = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      exports++;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => exports,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
