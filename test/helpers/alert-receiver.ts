import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A local destination: every POST it got, and how it answers the next ones ("hang" holds the answer until released). */
export interface Receiver {
  url: string;
  /** Every POST, with when it arrived (ms since the epoch). */
  got: { headers: IncomingHttpHeaders; body: string; path: string; at: number }[];
  answers: (number | "hang")[];
  /** Answers every request held so far with 200. */
  release(): void;
  held: number;
  close(): Promise<void>;
}

export async function receiver(path = "/hooks/T000/s3cr3t-token?key=q-secret"): Promise<Receiver> {
  const held: ServerResponse[] = [];
  const state: Receiver = {
    url: "",
    got: [],
    answers: [],
    held: 0,
    release() {
      for (const res of held.splice(0)) res.writeHead(200).end("ok");
    },
    close: () =>
      new Promise<void>((resolve) => {
        state.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      state.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), path: req.url ?? "", at: Date.now() });
      const answer = state.answers.shift() ?? 200;
      if (answer === "hang") {
        held.push(res);
        state.held++;
      } else res.writeHead(answer).end(answer >= 300 ? "oops" : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return state;
}
