/** A file the sandbox keeps across runs (its records, its id counter) that it cannot read back. */
export class SandboxStateFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SandboxStateFileError";
  }
}
