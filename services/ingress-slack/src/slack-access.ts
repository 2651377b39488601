/** Who may DM mom: admins always; then `dm`: "everyone" (default), "none", or a list of user ids. */
export function mayDirectMessage(userId: string, policy: { admins?: string[]; dm?: "everyone" | "none" | string[] }): boolean {
  if (policy.admins?.includes(userId)) return true;
  const dm = policy.dm ?? "everyone";
  if (dm === "everyone") return true;
  if (dm === "none") return false;
  return dm.includes(userId);
}

export const DM_REFUSAL =
  "Sorry, I only take direct messages from people my admins have allowed. You can mention me in a channel instead.";
