import type { Context, Hono } from "hono";
import type { AppEnv } from "./context.js";

/** Without ADMIN_TOKEN the console and the operator API are off: /console says so, instead of "no route". */
export function mountOperatorOff(root: Hono<AppEnv>): void {
  const off = (c: Context<AppEnv>) =>
    c.text("The console and the operator API are off: ADMIN_TOKEN is not set on this service. Set it (16+ characters) and restart.\n", 404);
  root.all("/console", off);
  root.all("/console/*", off);
}
