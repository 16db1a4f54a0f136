/** A command that cannot do its work for a reason outside the code (nothing answers, a refused token): one line, exit 1. */
export class CommandError extends Error {
  readonly exitCode = 1;
  constructor(message: string) {
    super(message);
    this.name = "CommandError";
  }
}
