import type { Context } from "hono";

export const FAVICON_PATH = "/favicon.ico";

// A small mark (a hook: webhooks) drawn inline, so no build step makes it and no other host serves it.
const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f6feb"/><path d="M20 7v11a6 6 0 0 1-12 0v-2" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/><circle cx="20" cy="7" r="2.5" fill="#fff"/></svg>`;

/**
 * The favicon, as SVG (browsers read the type from Content-Type, not the name): asked for by
 * every browser at /favicon.ico, and linked from the console's pages. Public: it says nothing.
 */
export function favicon(c: Context): Response {
  return c.body(FAVICON_SVG, 200, { "Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400" });
}
