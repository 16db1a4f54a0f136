/** What `showBannerOnEnter` reads: process.stdin, or any stream in a test. */
export interface KeyInput {
  on(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  off(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

/**
 * Prints the banner again each time the developer presses Enter (a line typed on stdin: the
 * terminal stays in its normal mode, so Ctrl-C still stops the stack). Logs scroll the first
 * banner away within seconds. Returns the function that stops listening, so stdin no longer
 * holds the process open.
 */
export function showBannerOnEnter(input: KeyInput, print: () => void): () => void {
  const onData = (chunk: Buffer | string) => {
    const lines = chunk.toString().split("\n").length - 1;
    if (lines > 0) print();
  };
  input.on("data", onData);
  input.resume();
  return () => {
    input.off("data", onData);
    input.pause();
  };
}
