import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as an OTLP/HTTP JSON export carries it (ids are hex strings in OTLP/JSON). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  /** The spans this one links to (a coalesced refresh links the events that asked for it). */
  links?: { traceId: string; spanId: string }[];
  serviceName: string | undefined;
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the exports received (to check the protocol the SDK used). */
  contentTypes: string[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: { spans?: (Omit<ReceivedSpan, "attributes" | "serviceName"> & { attributes?: OtlpAttribute[] })[] }[];
  }[];
}

const valueOf = (v: OtlpValue) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
const attributesOf = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/**
 * An OTLP/HTTP receiver on 127.0.0.1 that keeps the spans of `http/json` exports: a real collector's
 * traces endpoint, reduced to what a test asserts on.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      contentTypes.push(String(req.headers["content-type"]));
      if (req.method !== "POST" || req.url !== "/v1/traces" || !String(req.headers["content-type"]).includes("json")) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport;
      for (const rs of body.resourceSpans ?? []) {
        const serviceName = attributesOf(rs.resource?.attributes)["service.name"] as string | undefined;
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) spans.push({ ...s, attributes: attributesOf(s.attributes), serviceName });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
