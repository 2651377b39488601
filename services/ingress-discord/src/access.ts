import type { DmPolicy } from "./discord-options.js";

/** Whether `userId` may talk to mom in a DM: admins always; otherwise per the `dm` policy (default everyone). */
export function dmAllowed(userId: string, policy: DmPolicy | undefined, admins: readonly string[] = []): boolean {
  if (admins.includes(userId)) return true;
  if (policy === undefined || policy === "everyone") return true;
  if (policy === "none") return false;
  return policy.includes(userId);
}

/** The one line a refused DM gets. */
export const DM_REFUSED = "Sorry, I don't take direct messages from you here. Mention me in a channel instead.";
