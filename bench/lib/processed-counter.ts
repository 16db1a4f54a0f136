import { createServer } from "node:http";

/**
 * A worker process's count of finished jobs for the end-to-end bench: GET / answers
 * `{"count":n,"lastAt":ms}` (lastAt: when the last one finished, this machine's clock). Prints
 * `READY <url>` on stderr once listening, as the bench's server processes do.
 */
export function serveProcessedCount(): { completed(): void } {
  let count = 0;
  let lastAt = 0;
  const server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ count, lastAt })),
  );
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    console.error(`READY http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`);
  });
  return {
    completed() {
      count++;
      lastAt = Date.now();
    },
  };
}
