import { connect, type Socket } from "node:net";

export interface RawSocket {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves once the server sent `text` (e.g. a response's status line). */
  until(text: string | RegExp): Promise<string>;
  /** Resolves with everything received when the connection is closed (by either side). */
  closed: Promise<string>;
}

/**
 * A plain TCP connection to an http:// base URL, for requests no HTTP client would send.
 * `localAddress` (another loopback address, e.g. 127.0.0.2) makes it a different sender to the server.
 */
export function openRawSocket(baseUrl: string, options: { localAddress?: string } = {}): Promise<RawSocket> {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect({ port: Number(port), host: hostname, ...(options.localAddress ? { localAddress: options.localAddress } : {}) });
  let data = "";
  const listeners = new Set<() => void>();
  socket.on("data", (chunk) => {
    data += chunk.toString("latin1");
    for (const l of [...listeners]) l();
  });
  // A reset is what some tests provoke; the "close" below reports it.
  socket.on("error", () => undefined);
  const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(data)));
  return new Promise((resolve, reject) => {
    socket.once("error", reject);
    socket.once("connect", () =>
      resolve({
        socket,
        received: () => data,
        closed,
        until: (text) =>
          new Promise((done, fail) => {
            const check = () => {
              if (typeof text === "string" ? data.includes(text) : text.test(data)) {
                listeners.delete(check);
                done(data);
              }
            };
            listeners.add(check);
            void closed.then(() =>
              listeners.has(check) ? fail(new Error(`closed before ${String(text)}; got ${data.slice(0, 200)}`)) : undefined,
            );
            check();
          }),
      }),
    );
  });
}

/** Writes one byte of `text` every `everyMs` until the socket closes; returns a stop function. */
export function trickle(socket: Socket, text: string, everyMs: number): () => void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) {
      clearInterval(timer);
      return;
    }
    socket.write(text[i++]!);
  }, everyMs);
  socket.once("close", () => clearInterval(timer));
  return () => clearInterval(timer);
}
