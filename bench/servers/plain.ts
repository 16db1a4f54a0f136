// (a) The floor: Hono on @hono/node-server that reads the body and answers 200.
import { serve } from "@hono/node-server";
import { Hono } from "hono";

const app = new Hono();
app.post("/webhooks", async (c) => {
  await c.req.arrayBuffer();
  return c.json({ received: true });
});
serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => console.error(`READY http://127.0.0.1:${info.port}`));
for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => process.exit(0));
