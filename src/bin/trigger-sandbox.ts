// `trigger` through a sandbox: each event type as the sandbox action (or two) that makes it
// happen, so the record the event names exists upstream and the handlers' refresh finds it, as
// `stripe trigger` creates real objects. The sandbox signs and delivers the webhooks itself.
import { z } from "zod";
import { printable } from "../base/text.js";
import type { KnownEventType } from "../events/catalog.js";
import { nextStatus, type OrderStatus } from "../sandbox/records.js";
import { type Answer, answer, causeCode, CommandError, parsedJson, UsageError } from "./command.js";

/** How long the sandbox may take to answer one call (a wrong host must not hang the command). */
const CALL_TIMEOUT_MS = 10_000;

/** The sandbox's actions trigger uses (POST /_sandbox/actions/:name, sandbox/app.ts), each with the event it sends. */
const SENDS = {
  createOrder: "order.created",
  updateOrderStatus: "order.status_changed",
  refundOrder: "order.refunded",
  createBooking: "booking.created",
  cancelBooking: "booking.status_changed",
  createReview: "review.created",
  updateMenuItem: "menu_item.updated",
} as const satisfies Record<string, KnownEventType>;
type SandboxAction = keyof typeof SENDS;

/** --data: the actions' input; `id`, when given, names the record to change. */
type Fields = Record<string, unknown> & { id?: string };
/** A record as the sandbox answers it: its id, and whatever else it holds. */
const SandboxRecord = z.looseObject({ id: z.string() });
type SandboxRecord = z.infer<typeof SandboxRecord>;
/** A refusal, as the sandbox writes every one (errorAnswer, sandbox/app.ts). */
const Refusal = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
const State = z.object({ menuItems: z.array(SandboxRecord) });

/** One action the sandbox took, and the record it answered. */
interface Done {
  action: SandboxAction;
  record: SandboxRecord;
}

/** The sandbox's control routes at `url`; every failure is one CommandError line naming the sandbox. */
function sandboxControls(url: string) {
  /** `what` names the call in a refusal: the action, or the route read. */
  async function call(what: string, method: "GET" | "POST", path: string, body?: Fields): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${url}${path}`, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
    } catch (err) {
      throw new CommandError(
        `the sandbox at ${url} does not answer (${method} ${path}: ${whyUnanswered(err)}): is it running? SANDBOX_URL or --sandbox names it`,
      );
    }
    const text = await res.text();
    const json = parsedJson(text, undefined);
    if (res.ok && json !== undefined) return json;
    const refusal = Refusal.safeParse(json).data?.error;
    if (refusal)
      throw new CommandError(
        `the sandbox at ${url} refused ${what}: ${printable(refusal.message)} (${res.status} ${refusal.code})`,
        refusal.code,
      );
    throw new CommandError(`${url} answered ${method} ${path} with ${res.status} ${printable(text.slice(0, 200))}: is it a sandbox?`);
  }
  /** An answer of the shape `schema`, else one line saying the sandbox answered unlike one. */
  const shaped = <S extends z.ZodType>(schema: S, json: unknown, path: string): z.infer<S> => {
    const result = schema.safeParse(json);
    if (!result.success) throw new CommandError(`${url} answered ${path} unlike a sandbox: is SANDBOX_URL the sandbox's?`);
    return result.data;
  };
  return {
    url,
    async act(action: SandboxAction, input: Fields): Promise<Done> {
      const path = `/_sandbox/actions/${action}`;
      return { action, record: shaped(SandboxRecord, await call(action, "POST", path, input), path) };
    },
    /** The record's state now (the last of its history), or undefined when the sandbox holds none of that id. */
    async current(id: string): Promise<SandboxRecord | undefined> {
      const path = `/_sandbox/history/${encodeURIComponent(id)}`;
      return shaped(z.array(SandboxRecord), await call(path, "GET", path), path).at(-1);
    },
    async menuItems(): Promise<SandboxRecord[]> {
      return shaped(State, await call("/_sandbox/state", "GET", "/_sandbox/state"), "/_sandbox/state").menuItems;
    },
  };
}
type SandboxControls = ReturnType<typeof sandboxControls>;

/** Why fetch got no answer: the cause's code (ECONNREFUSED), else its message (fetch's "bad port"), else the error's name. */
const whyUnanswered = (err: unknown) => causeCode(err) ?? ((err as Error).cause as Error | undefined)?.message ?? (err as Error).name;

/** The status after the record's, when it has one: none for a terminal order or an unknown record. */
const nextStatusOf = (record: SandboxRecord | undefined) =>
  typeof record?.status === "string" ? nextStatus(record.status as OrderStatus) : undefined;

/** The fields a booking needs that the sandbox's action does not fill in (POST /bookings asks the same). */
const bookingSample = () => ({
  date: new Date().toISOString().slice(0, 10),
  time: "19:30",
  partySize: 2,
  diner: { name: "trigger", email: "trigger@example.com" },
});

const createBooking = (sandbox: SandboxControls, data: Fields) => sandbox.act("createBooking", { ...bookingSample(), ...data });

/**
 * Moves the order --data names to `status`, else to its next status. Without an id, a new order
 * first (PENDING, then CONFIRMED). An order the sandbox does not hold, or one with no next status,
 * gets no status filled in: the sandbox's refusal then says what is wrong.
 */
async function moveOrder(sandbox: SandboxControls, data: Fields): Promise<Done[]> {
  if (data.id !== undefined) {
    const status = data.status ?? nextStatusOf(await sandbox.current(data.id));
    return [await sandbox.act("updateOrderStatus", { ...data, ...(status === undefined ? {} : { status }) })];
  }
  const created = await sandbox.act("createOrder", data);
  return [created, await sandbox.act("updateOrderStatus", { id: created.record.id, status: data.status ?? nextStatusOf(created.record) })];
}

/** Refunds the order --data names; without an id, a new one first, paid (the sandbox refunds only a paid order: checkRefund). */
async function refundOrder(sandbox: SandboxControls, data: Fields): Promise<Done[]> {
  if (data.id !== undefined) return [await sandbox.act("refundOrder", data)];
  const created = await sandbox.act("createOrder", { paid: true, ...data });
  return [created, await sandbox.act("refundOrder", { ...data, id: created.record.id })];
}

/** Cancels the booking --data names; without an id, a new one first. */
async function cancelBooking(sandbox: SandboxControls, data: Fields): Promise<Done[]> {
  if (data.id !== undefined) return [await sandbox.act("cancelBooking", data)];
  const created = await createBooking(sandbox, data);
  return [created, await sandbox.act("cancelBooking", { id: created.record.id })];
}

/**
 * Changes the menu item --data names, else the sandbox's first (of --data's restaurantId, if
 * given): the price, description or stock --data gives, else its price by 0.50.
 */
async function updateMenuItem(sandbox: SandboxControls, data: Fields): Promise<Done[]> {
  const patched = ["price", "description", "stock"].some((field) => field in data);
  if (data.id !== undefined && patched) return [await sandbox.act("updateMenuItem", data)];
  const item =
    data.id === undefined
      ? (await sandbox.menuItems()).find((m) => data.restaurantId === undefined || m.restaurantId === data.restaurantId)
      : await sandbox.current(data.id);
  if (data.id === undefined && !item) throw new CommandError(`the sandbox at ${sandbox.url} has no menu item to change`);
  // An item the sandbox does not hold gets no price filled in: its refusal names the id.
  const price = !patched && typeof item?.price === "number" ? { price: item.price + 0.5 } : {};
  return [await sandbox.act("updateMenuItem", { ...data, id: data.id ?? item?.id, ...price })];
}

/** What each event type takes in the sandbox: the actions, in order, with --data as their input. */
const THROUGH_SANDBOX: Record<KnownEventType, (sandbox: SandboxControls, data: Fields) => Promise<Done[]>> = {
  "order.created": async (sandbox, data) => [await sandbox.act("createOrder", data)],
  "order.status_changed": moveOrder,
  "order.refunded": refundOrder,
  "booking.created": async (sandbox, data) => [await createBooking(sandbox, data)],
  "booking.status_changed": cancelBooking,
  "review.created": async (sandbox, data) => [await sandbox.act("createReview", data)],
  "menu_item.updated": updateMenuItem,
};

/** Makes an event of `type` happen in the sandbox at `url`; its answer lists what the sandbox did and answered. */
export async function triggerThroughSandbox(url: string, type: KnownEventType, data: Record<string, unknown>): Promise<Answer> {
  if (data.id !== undefined && typeof data.id !== "string") throw new UsageError(`--data's "id" names a record: a string`);
  const done = await THROUGH_SANDBOX[type](sandboxControls(url), data);
  const steps = done.map(({ action, record }) => `${action} ${printable(record.id)}`).join(", then ");
  const sent = done.map(({ action }) => SENDS[action]).join(" and ");
  return answer(
    { sandbox: url, done },
    `${type} through the sandbox at ${url}: ${steps}; the sandbox sends ${sent} to its webhook subscribers`,
  );
}
