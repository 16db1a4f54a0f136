import { describe, expect, it } from "vitest";
import { codedError, NamedError } from "../../src/errors.js";
import { toHttpFailure } from "../../src/http/errors.js";
import { PayloadTooLargeError } from "../../src/http/errors.js";
import { AccountError, MirrorFilterError } from "../../src/mirror/errors.js";
import { BacklogFullError, UnstorableEventError } from "../../src/queue/errors.js";
import { OperatorActionError } from "../../src/worker/errors.js";
import { UpstreamBadRequestError } from "../../src/upstream/errors.js";

// Each error declares its HTTP answer where it is defined (issue 56, item 2); toHttpFailure answers
// by what it declares, and only by that: a code alone is no status.
describe("an error's HTTP answer", () => {
  it("is the status and message its class declares, a 503 with when to retry", () => {
    expect(toHttpFailure(new PayloadTooLargeError(1024))).toEqual({
      status: 413,
      body: { error: { code: "payload_too_large", message: "body exceeds 1024 bytes" } },
    });
    expect(toHttpFailure(new UnstorableEventError("cyclic"))).toEqual({
      status: 422,
      body: { error: { code: "unstorable_event", message: "the event cannot be stored" } },
    });
    expect(toHttpFailure(new BacklogFullError(5))).toEqual({
      status: 503,
      body: { error: { code: "backlog_full", message: "too many events are waiting; retry later" } },
      headers: { "Retry-After": "5" },
    });
    expect(toHttpFailure(new MirrorFilterError("limit", "limit must be an integer")).status).toBe(400);
  });

  it("is read from its layer's table by code, where one class has several", () => {
    expect(toHttpFailure(new AccountError("key_refused", "the API refused the key")).status).toBe(422);
    expect(toHttpFailure(new AccountError("account_exists", "acme exists")).status).toBe(409);
    expect(toHttpFailure(new OperatorActionError("event_not_found", "no event evt_1")).status).toBe(404);
    expect(toHttpFailure(new OperatorActionError("confirm_required", "send confirm")).status).toBe(409);
  });

  it("is a 500 saying nothing for an error that declares none, whatever its code", () => {
    class Undeclared extends codedError("invalid_request") {}
    const internal = { status: 500, body: { error: { code: "internal", message: "internal error" } } };
    expect(toHttpFailure(new Undeclared("boom"))).toEqual(internal);
    expect(toHttpFailure(Object.assign(new NamedError("x"), { code: "invalid_filter" }))).toEqual(internal);
    // The API's refusal of our request is not the operator's bad request.
    expect(toHttpFailure(new UpstreamBadRequestError("GET /api/v1/orders answered 400"))).toEqual(internal);
    expect(toHttpFailure("not an error")).toEqual(internal);
  });
});
