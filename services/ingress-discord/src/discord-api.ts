import type { SharedFile } from "@mom/ingress-sdk";
import { type APIEmbed, type APIMessage, type Client, ChannelType, Routes } from "discord.js";

export interface OutMessage {
  content?: string;
  embeds?: APIEmbed[];
  /** New files to upload with the message. */
  files?: SharedFile[];
  /** Reply to this message of the same channel (dropped silently when it is gone). */
  replyTo?: string;
  /**
   * Let `<@id>` mentions in the content ping those users (answers), or only these users (an
   * approval prompt pings its approvers, whatever its arguments say); progress pings nobody.
   */
  pingUsers?: boolean | string[];
  /** Action rows (buttons); `[]` removes them on an edit. */
  components?: unknown[];
}

/** What the renderer needs of Discord: the REST client's calls (tests fake them). */
export type DiscordApi = Pick<RestDiscordApi, "send" | "edit" | "remove" | "typing" | "startThread" | "threadable">;

const SNOWFLAKE = /^\d{15,21}$/;

function payload(m: OutMessage, edit: boolean): Record<string, unknown> {
  return {
    ...(m.content !== undefined && { content: m.content }),
    ...((m.embeds !== undefined || edit) && { embeds: m.embeds ?? [] }),
    allowed_mentions: Array.isArray(m.pingUsers)
      ? { parse: [], users: m.pingUsers.filter((id) => SNOWFLAKE.test(id)).slice(0, 100), replied_user: false }
      : m.pingUsers
        ? { parse: ["users"], replied_user: false }
        : { parse: [], replied_user: false },
    ...(!edit && m.replyTo && SNOWFLAKE.test(m.replyTo) && { message_reference: { message_id: m.replyTo, fail_if_not_exists: false } }),
    ...(m.files?.length && { attachments: m.files.map((f, id) => ({ id, filename: f.filename })) }),
    ...(m.components !== undefined && { components: m.components }),
  };
}

function files(m: OutMessage) {
  return m.files?.map((f) => ({ name: f.filename, data: Buffer.from(f.bytes), ...(f.mimeType && { contentType: f.mimeType }) }));
}

/** The few Discord calls the renderer makes, over discord.js's REST client (`client.rest`): retries, 429s and buckets are its business. */
export class RestDiscordApi {
  constructor(private readonly client: Client) {}

  async send(channelId: string, m: OutMessage): Promise<string> {
    const f = files(m);
    const res = (await this.client.rest.post(Routes.channelMessages(channelId), { body: payload(m, false), ...(f && { files: f }) })) as APIMessage;
    return res.id;
  }

  async edit(channelId: string, messageId: string, m: OutMessage): Promise<void> {
    const f = files(m);
    await this.client.rest.patch(Routes.channelMessage(channelId, messageId), { body: payload(m, true), ...(f && { files: f }) });
  }

  async remove(channelId: string, messageId: string): Promise<void> {
    await this.client.rest.delete(Routes.channelMessage(channelId, messageId));
  }

  async typing(channelId: string): Promise<void> {
    await this.client.rest.post(Routes.channelTyping(channelId));
  }

  /** Starts a public thread on a message; resolves with the thread's channel id. */
  async startThread(channelId: string, messageId: string, name: string): Promise<string> {
    const res = (await this.client.rest.post(Routes.threads(channelId, messageId), { body: { name, auto_archive_duration: 1440 } })) as { id: string };
    return res.id;
  }

  /** True when threads can be started on messages of this channel (guild text and announcement channels). */
  async threadable(channelId: string): Promise<boolean> {
    const ch = this.client.channels.cache.get(channelId) ?? (await this.client.channels.fetch(channelId).catch(() => null));
    return ch?.type === ChannelType.GuildText || ch?.type === ChannelType.GuildAnnouncement;
  }
}
