import { RecentMap } from "@mom/ingress-sdk";
import type { MatrixClient } from "matrix-bot-sdk";
import type { Logger } from "pino";

const notFound = (err: unknown) => (err as { errcode?: string })?.errcode === "M_NOT_FOUND" || (err as { statusCode?: number })?.statusCode === 404;

/** The line an encrypted room gets, once. */
export const E2EE_REFUSAL =
  "🔒 This room is end-to-end encrypted, and I can't read encrypted messages, so I won't answer here. Invite me to a room without encryption (a room's encryption cannot be turned off once it is on).";

/**
 * What the ingress needs to know of a room, asked of the homeserver once and kept until the room
 * changes: whether it is a direct chat (listed in the bot's `m.direct`, or just the bot and one
 * other member), whether it is encrypted (`m.room.encryption` state), and people's display names.
 */
export class RoomFacts {
  private readonly members = new RecentMap<number>(5_000);
  private readonly encrypted = new RecentMap<boolean>(5_000);
  private readonly names = new RecentMap<{ name?: string }>(5_000);

  constructor(
    private readonly client: MatrixClient,
    private readonly log: Logger,
  ) {}

  async isDirect(roomId: string): Promise<boolean> {
    if (this.client.dms.isDm(roomId)) return true;
    return (await this.members.remember(roomId, async () => (await this.client.getJoinedRoomMembers(roomId)).length)) === 2;
  }

  isEncrypted(roomId: string): Promise<boolean> {
    return this.encrypted.remember(roomId, async () => {
      try {
        return !!(await this.client.getRoomStateEvent(roomId, "m.room.encryption", ""))?.algorithm;
      } catch (err) {
        if (!notFound(err)) throw err;
        return false;
      }
    });
  }

  /** Membership changed: counted again on the next message. */
  membersChanged(roomId: string): void {
    this.members.delete(roomId);
  }

  /** Encryption was turned on (it cannot be turned off). */
  encryptionOn(roomId: string): void {
    this.encrypted.set(roomId, true);
  }

  /** A person's display name (their global profile), or undefined when they have none or it cannot be read. */
  async displayName(userId: string): Promise<string | undefined> {
    const known = await this.names.remember(userId, async () => {
      try {
        const profile = (await this.client.getUserProfile(userId)) as { displayname?: unknown };
        return { name: typeof profile?.displayname === "string" ? profile.displayname : undefined };
      } catch (err) {
        if (!notFound(err)) this.log.debug({ err, userId }, "could not read a matrix profile");
        return {};
      }
    });
    return known.name;
  }
}
