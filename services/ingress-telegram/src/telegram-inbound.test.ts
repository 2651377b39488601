import { describe, expect, it } from "@jest/globals";
import type { Message } from "grammy/types";
import { addressesBot, toTelegramInbound } from "./telegram-inbound.js";

const bot = { id: 99, username: "mom_bot" };
const ana = { id: 1, is_bot: false, first_name: "Ana", last_name: "Lopez", username: "ana" };
const group = { id: -1001, type: "supergroup" as const, title: "team" };
const msg = (over: Partial<Message>): Message => ({ message_id: 5, date: 1_700_000_000, chat: group, from: ana, text: "hi", ...over }) as Message;

describe("telegram inbound", () => {
  it("a group message addresses mom by mention, text mention, command or reply; a DM always", () => {
    expect(addressesBot(msg({ text: "hi all" }), bot)).toBe(false);
    expect(addressesBot(msg({ text: "@Mom_Bot look", entities: [{ type: "mention", offset: 0, length: 8 }] }), bot)).toBe(true);
    expect(addressesBot(msg({ text: "@other look", entities: [{ type: "mention", offset: 0, length: 6 }] }), bot)).toBe(false);
    expect(addressesBot(msg({ text: "mom look", entities: [{ type: "text_mention", offset: 0, length: 3, user: { id: 99, is_bot: true, first_name: "mom" } }] }), bot)).toBe(true);
    expect(addressesBot(msg({ text: "/ask@mom_bot why", entities: [{ type: "bot_command", offset: 0, length: 12 }] }), bot)).toBe(true);
    expect(addressesBot(msg({ reply_to_message: msg({ message_id: 4, from: { id: 99, is_bot: true, first_name: "mom" } }) as never }), bot)).toBe(true);
    expect(addressesBot(msg({ reply_to_message: msg({ message_id: 1, from: { id: 99, is_bot: true, first_name: "mom" }, forum_topic_created: { name: "t", icon_color: 1 } }) as never }), bot)).toBe(false);
    expect(addressesBot(msg({ chat: { id: 1, type: "private", first_name: "Ana" } }), bot)).toBe(true);
  });

  it("converts a topic message with a document, fetched by the download it is given", async () => {
    const fetched = new Uint8Array([1, 2, 3]);
    const download = (f: { fileId: string }) => async () => ({ bytes: f.fileId === "F1" ? fetched : new Uint8Array() });
    const m = toTelegramInbound(msg({ text: undefined, caption: "see", message_thread_id: 7, is_topic_message: true, document: { file_id: "F1", file_unique_id: "u", file_name: "a.csv", file_size: 3, mime_type: "text/csv" } }), bot, download);
    expect(m).toEqual({
      id: "5",
      channelId: "-1001",
      timestamp: "2023-11-14T22:13:20.000Z",
      sender: { id: "1", username: "ana", displayName: "Ana Lopez", isBot: false },
      text: "see",
      rawText: "see",
      files: [{ fileId: "F1", filename: "a.csv", size: 3, mimeType: "text/csv", download: expect.any(Function) }],
      isMention: false,
      isDirect: false,
      replyTo: "7",
    });
    expect((await m!.files![0]!.download(10)).bytes).toBe(fetched);
    expect(toTelegramInbound(msg({ text: undefined, new_chat_members: [ana] } as never), bot, download)).toBeUndefined();
  });
});
