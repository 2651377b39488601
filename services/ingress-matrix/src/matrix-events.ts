import { ApprovalReactions, type PlatformContext } from "@mom/ingress-sdk";
import type { MomMatrixClient } from "./matrix-client.js";
import { type BotIdentity, localpart, type MatrixEvent, relationOf, threadOf, toMatrixInbound } from "./matrix-inbound.js";
import type { MediaDownloads } from "./matrix-media.js";
import type { MatrixSettings } from "./matrix-options.js";
import { E2EE_REFUSAL, type RoomFacts } from "./matrix-rooms.js";
import { APPROVAL_FIELD, type MatrixSurface } from "./matrix-surface.js";

export interface MatrixEventsDeps {
  ctx: PlatformContext<MatrixSettings>;
  client: MomMatrixClient;
  me: BotIdentity;
  rooms: RoomFacts;
  media: MediaDownloads;
  surface: MatrixSurface;
}

/**
 * What the sync loop delivers, turned into what mom does: invites accepted, encrypted rooms
 * refused, messages handed to the shell, reactions on approval prompts decided. Each handler is
 * awaited by the sync loop, so a failure (NATS away) leaves the sync token before the event.
 */
export class MatrixEvents {
  /** Without a stored sync token the first sync brings recent history: that is not answered again. */
  ignoreBefore?: number;
  private readonly refused = new Set<string>();

  constructor(private readonly d: MatrixEventsDeps) {}

  private old(ev: MatrixEvent): boolean {
    return this.ignoreBefore !== undefined && ev.origin_server_ts < this.ignoreBefore;
  }

  async invite(roomId: string, ev: MatrixEvent): Promise<void> {
    const log = this.d.ctx.log.child({ room: roomId, inviter: ev.sender });
    if (this.d.ctx.settings.autoJoin === false) return void log.info("matrix invite not accepted (autoJoin is off)");
    try {
      await this.d.client.joinRoom(roomId);
      log.info("matrix invite accepted");
    } catch (err) {
      // A room that cannot be joined (the invite was withdrawn) must not hold up every other room.
      log.warn({ err }, `could not join a matrix room: ${(err as Error).message}`);
    }
  }

  async joined(roomId: string): Promise<void> {
    if (await this.d.rooms.isEncrypted(roomId)) await this.refuseEncrypted(roomId);
  }

  async event(roomId: string, ev: MatrixEvent): Promise<void> {
    if (ev.type === "m.room.member") this.d.rooms.membersChanged(roomId);
    if (ev.type === "m.room.encryption" || ev.type === "m.room.encrypted") {
      this.d.rooms.encryptionOn(roomId);
      if (ev.sender !== this.d.me.userId) await this.refuseEncrypted(roomId);
      return;
    }
    // Any redaction: only the bot's own messages are ever looked up. Rooms v1–10 name the target at the top, v11 in the content.
    const redacts = ev.type === "m.room.redaction" ? (ev.content.redacts ?? ev.redacts) : undefined;
    if (typeof redacts === "string") return void this.d.surface.redacted.add(redacts);
    if (ev.sender === this.d.me.userId) return;
    if (ev.type === "m.reaction") return this.reaction(roomId, ev);
    if (ev.type === "m.room.message") return this.message(roomId, ev);
  }

  private async message(roomId: string, ev: MatrixEvent): Promise<void> {
    const { ctx, rooms } = this.d;
    if (this.old(ev)) return void ctx.log.debug({ room: roomId, event: ev.event_id }, "matrix message from before the first sync: not answered");
    if (await rooms.isEncrypted(roomId)) return this.refuseEncrypted(roomId);
    const m = toMatrixInbound(roomId, ev, this.d.me, { isDirect: await rooms.isDirect(roomId), displayName: await rooms.displayName(ev.sender) }, this.d.media);
    if (m) await ctx.inbound.receive(m);
  }

  /** A ✅ / ❌ on an approval prompt -> the decision; someone who may not decide is told so under the prompt. */
  private async reaction(roomId: string, ev: MatrixEvent): Promise<void> {
    const rel = relationOf(ev.content);
    const promptId = rel.event_id;
    if (rel.rel_type !== "m.annotation" || !rel.key || !promptId || this.old(ev)) return;
    const user = { id: ev.sender, username: localpart(ev.sender) };
    const decided = await this.d.surface.approvals.decide(this.d.ctx.inbound, { promptId, key: rel.key, channel: roomId, user }, () => this.recall(roomId, promptId));
    if (decided?.refusal) {
      await this.d.surface
        .notice(roomId, `${this.d.surface.dialect.mention(ev.sender)} ${decided.refusal}`, { ...(decided.thread && { thread: decided.thread }), replyTo: promptId }, [ev.sender])
        .catch((err: unknown) => this.d.ctx.log.warn({ err, room: roomId }, "could not tell a matrix user they may not decide"));
    }
  }

  /** A prompt shown before a restart: the bot's own message, carrying the approval id (and its text, to close it). */
  private async recall(roomId: string, eventId: string): Promise<{ approvalId: string; thread?: string; text?: string } | undefined> {
    const ev = (await this.d.client.getEvent(roomId, eventId).catch(() => undefined)) as MatrixEvent | undefined;
    const approvalId = ev?.sender === this.d.me.userId ? ev.content[APPROVAL_FIELD] : undefined;
    const thread = ev && threadOf(ev.content);
    const body = typeof ev?.content.body === "string" ? ev.content.body.replace(`\n\n${ApprovalReactions.howTo}`, "") : undefined;
    return typeof approvalId === "string" ? { approvalId, ...(thread && { thread }), ...(body && { text: body }) } : undefined;
  }

  /** The room is told once (remembered in the store, so a restart does not say it again) and the refusal is logged. */
  private async refuseEncrypted(roomId: string): Promise<void> {
    const key = `mom.e2ee_refused.${roomId}`;
    if (this.refused.has(roomId) || (await this.d.client.storageProvider.readValue(key))) return;
    this.refused.add(roomId);
    this.d.ctx.log.warn({ room: roomId }, "matrix room is end-to-end encrypted: refused (this ingress does not decrypt)");
    try {
      await this.d.client.sendNotice(roomId, E2EE_REFUSAL);
      await this.d.client.storageProvider.storeValue(key, "1");
    } catch (err) {
      this.d.ctx.log.warn({ err, room: roomId }, `could not tell an encrypted matrix room it is refused: ${(err as Error).message}`);
    }
  }
}
