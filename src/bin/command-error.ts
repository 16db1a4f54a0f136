/** A command that cannot do its work for a reason outside the code (nothing answers, a refused token): one line, exit 1. */
export class CommandError extends Error {
  readonly exitCode = 1;
  constructor(
    message: string,
    /** The service's code when it refused the request (confirm_required, event_not_found, …). */
    readonly refusal?: string,
  ) {
    super(message);
    this.name = "CommandError";
  }
}
