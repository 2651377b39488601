/** A command used wrongly (unknown id, bad option value): one line for the operator, no stack. */
export class CommandError extends Error {
  override name = "CommandError";
}
