import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { denyFraming, requireSameOrigin } from "../../src/http/guards.js";

const app = new Hono();
app.use("*", denyFraming(), requireSameOrigin());
app.all("/op", (c) => c.json({ ran: true }));

const ORIGIN = "http://localhost";
const post = (headers: Record<string, string>, body: string | undefined = "{}") =>
  app.request("/op", { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
const code = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe("requireSameOrigin", () => {
  it("lets GET and HEAD through whatever their origin (they change nothing)", async () => {
    for (const method of ["GET", "HEAD"]) {
      const res = await app.request("/op", { method, headers: { "sec-fetch-site": "cross-site", origin: "https://evil.example" } });
      expect(res.status).toBe(200);
    }
  });

  it.each(["cross-site", "same-site"])("refuses a POST whose Sec-Fetch-Site is %s", async (site) => {
    const res = await post({ "sec-fetch-site": site, origin: ORIGIN });
    expect(res.status).toBe(403);
    expect(await code(res)).toBe("cross_origin_request");
  });

  it.each(["same-origin", "none"])("accepts a POST whose Sec-Fetch-Site is %s", async (site) => {
    expect((await post({ "sec-fetch-site": site })).status).toBe(200);
  });

  it("trusts Sec-Fetch-Site over Origin when a browser sends both", async () => {
    expect((await post({ "sec-fetch-site": "cross-site", origin: ORIGIN })).status).toBe(403);
  });

  it("falls back to Origin: refuses another origin, a null origin, another port", async () => {
    for (const origin of ["https://evil.example", "null", "http://localhost:8080", "https://localhost"]) {
      const res = await app.request("/op", { method: "PUT", body: "{}", headers: { "content-type": "application/json", origin } });
      expect(res.status, origin).toBe(403);
    }
  });

  it("accepts an Origin equal to the request's own origin", async () => {
    expect((await post({ origin: ORIGIN })).status).toBe(200);
  });

  it("accepts a request with neither header (curl, scripts: not a browser CSRF vector)", async () => {
    expect((await post({})).status).toBe(200);
  });

  it("answers 415 to a body that is not JSON in UTF-8 (a text/plain form post is a CSRF shape; the edge's rule)", async () => {
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json; charset=latin1",
    ]) {
      const res = await post({ "content-type": type });
      expect(res.status, type).toBe(415);
      expect(await code(res)).toBe("unsupported_media_type");
    }
    const none = await app.request("/op", { method: "POST", body: "{}", headers: {} });
    expect(none.status).toBe(415);
  });

  it("accepts JSON with parameters, and a body-less PUT without a Content-Type", async () => {
    expect((await post({ "content-type": "application/json; charset=utf-8" })).status).toBe(200);
    expect((await app.request("/op", { method: "PUT" })).status).toBe(200);
  });

  it("forbids framing on every answer, refusals included", async () => {
    for (const res of [await app.request("/op"), await post({ "sec-fetch-site": "cross-site" })]) {
      expect(res.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
    }
  });
});
