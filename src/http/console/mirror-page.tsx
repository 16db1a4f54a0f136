import { printable } from "../../mirror/id-text.js";
import { CONSOLE_PATH, Layout, When } from "./layout.js";
import { recordHref } from "./record-page.js";
import { refuseUnknown } from "./time-range.js";

export const MIRROR_PAGE_SIZE = 50;
const KNOWN = ["restaurantId", "status", "cursor"] as const;

export interface MirrorFilters {
  restaurantId?: string;
  status?: string;
  cursor?: string;
}

/** The mirror page's query, strictly (values are checked by the mirror's own filter parser). */
export function parseMirrorFilters(params: Record<string, string>): MirrorFilters {
  refuseUnknown(params, KNOWN);
  return Object.fromEntries(
    Object.entries(params)
      .filter(([, v]) => v.trim() !== "")
      .map(([k, v]) => [k, v.trim()]),
  );
}

export interface MirrorRow {
  record: Record<string, unknown>;
  readAt?: Date | undefined;
  syncedAt?: Date | undefined;
}

const text = (v: unknown) => (typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : "");

/** The few fields that tell records of a kind apart at a glance. */
function gist(kind: string, r: Record<string, unknown>): string {
  if (kind === "orders") return `${text(r.type)} · ${text(r.total)} ${text(r.currency)}`;
  if (kind === "bookings") return `${text(r.date)} ${text(r.time)} · party of ${text(r.partySize)}`;
  if (kind === "menu-items") return `${text(r.name)} · ${text(r.price)}${r.stock === undefined ? "" : ` · stock ${text(r.stock)}`}`;
  return "";
}

function mirrorHref(kind: string, filters: MirrorFilters): string {
  const params = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => typeof e[1] === "string"));
  const q = params.toString();
  return `${CONSOLE_PATH}/mirror/${kind}${q ? `?${q}` : ""}`;
}

export function MirrorPage(props: {
  kinds: readonly string[];
  kind: string;
  filters: MirrorFilters;
  rows: MirrorRow[];
  nextCursor: string | null;
  now: Date;
}) {
  const { kind, filters, now } = props;
  const base = { ...filters, cursor: undefined };
  return (
    <Layout title={`Mirror: ${kind}`} section="mirror">
      <div class="presets">{props.kinds.map((k) => (k === kind ? <strong>{k}</strong> : <a href={mirrorHref(k, base)}>{k}</a>))}</div>
      <form class="filters" method="get" action={`${CONSOLE_PATH}/mirror/${kind}`}>
        <label>
          Restaurant
          <input name="restaurantId" placeholder="rest_…" value={filters.restaurantId ?? ""} />
        </label>
        {kind === "orders" || kind === "bookings" ? (
          <label>
            Status
            <input name="status" placeholder={kind === "orders" ? "CONFIRMED" : "CONFIRMED"} value={filters.status ?? ""} />
          </label>
        ) : null}
        <button type="submit" class="primary">
          Filter
        </button>
        <a href={`${CONSOLE_PATH}/mirror/${kind}`}>clear</a>
      </form>
      {props.rows.length === 0 ? (
        <p class="muted">No record matches.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Id</th>
              <th>Restaurant</th>
              <th>Status</th>
              <th>Summary</th>
              <th>Last read from the API</th>
              <th>Last written here</th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map(({ record, readAt, syncedAt }) => (
              <tr>
                <td class="mono">
                  <a href={recordHref(kind, text(record.id))}>{printable(text(record.id))}</a>
                  <details>
                    <summary>as stored</summary>
                    <pre>{JSON.stringify(record, null, 2)}</pre>
                  </details>
                </td>
                <td class="mono">{text(record.restaurantId)}</td>
                <td>{text(record.status)}</td>
                <td>{gist(kind, record)}</td>
                <td>
                  <When at={readAt} now={now} />
                </td>
                <td>
                  <When at={syncedAt} now={now} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        {filters.cursor ? <a href={mirrorHref(kind, base)}>« first page</a> : null}
        {props.nextCursor ? <a href={mirrorHref(kind, { ...base, cursor: props.nextCursor })}>next »</a> : null}
      </div>
    </Layout>
  );
}
