import { runRead } from "./refresh-read.js";
import type { RefreshKindDeps, RefreshOutcome } from "./refresh-kind-types.js";
import { WHOLE_MENU, type PendingRestaurant } from "./refresh-scheduler.js";

/**
 * Restaurants waiting at once from which one company-wide menu read is cheaper than one read each:
 * a menu fits a page or two, the company's menus a few pages, so from three restaurants on the
 * company-wide list costs fewer calls (and it is bounded by the company's menu size, not by time).
 */
export const COMPANY_WIDE_MENUS_FROM = 3;

/**
 * Menus are refreshed whole: each restaurant's list (every page), or the company's when
 * COMPANY_WIDE_MENUS_FROM or more restaurants wait. A menu read to its end forgets its restaurants'
 * requests (by the version taken, so one made meanwhile stays).
 */
export async function refreshMenus(deps: RefreshKindDeps, restaurants: readonly PendingRestaurant[]): Promise<RefreshOutcome> {
  const waiting = restaurants.filter((r) => r.ids.has(WHOLE_MENU));
  const outcome: RefreshOutcome = { calls: 0, reads: 0, written: 0, found: 0, missing: [], unlisted: [] };
  const scopes = waiting.length >= COMPANY_WIDE_MENUS_FROM ? [undefined] : waiting.map((r) => r.restaurantId);
  // No targets: a menu read always walks its whole list (the cap does not apply to it).
  const ctx = { ...deps, maxPages: Number.POSITIVE_INFINITY };
  for (const restaurantId of scopes) {
    const read = await runRead(ctx, { ...(restaurantId === undefined ? {} : { restaurantId }), filter: {}, targets: [] });
    deps.onRead?.({ kind: deps.kind, scope: restaurantId === undefined ? "company" : "restaurant" });
    outcome.reads++;
    outcome.calls += read.calls;
    outcome.written += read.written;
    const served = waiting.filter((r) => restaurantId === undefined || r.restaurantId === restaurantId);
    for (const r of served) {
      await deps.scheduler.forgetRead(deps.kind, r.restaurantId, new Map([[WHOLE_MENU, r.ids.get(WHOLE_MENU) ?? ""]]));
      outcome.found++;
    }
  }
  await Promise.all(restaurants.map((r) => deps.scheduler.forgetIfIdle(deps.kind, r.restaurantId, r.score)));
  return outcome;
}
