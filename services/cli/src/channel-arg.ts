import { type ChannelRef, parseQualifiedChannelId } from "@mom/contracts";
import { CommandError } from "./command-error.js";

/** `<adapter>/<channel>` from the command line; a malformed one is a usage error, not a crash. */
export function channelArg(qualified: string): ChannelRef {
  try {
    return parseQualifiedChannelId(qualified);
  } catch (err) {
    throw new CommandError(`${(err as Error).message}, e.g. cli/local or slack-acme/C0A34FL8PMH`);
  }
}
