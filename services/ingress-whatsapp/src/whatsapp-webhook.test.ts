import { describe, expect, it } from "@jest/globals";
import { createHmac } from "node:crypto";
import { failedDeliveries, toWhatsAppInbound, validSignature, webhookMessages } from "./whatsapp-webhook.js";

const body = (message: object) => ({
  object: "whatsapp_business_account",
  entry: [{ id: "W", changes: [{ field: "messages", value: { metadata: { phone_number_id: "55" }, contacts: [{ wa_id: "491701", profile: { name: "Ana Lopez" } }], messages: [message] } }] }],
});

describe("whatsapp webhook", () => {
  it("checks X-Hub-Signature-256 over the raw body", () => {
    const raw = Buffer.from('{"a":1}');
    const good = `sha256=${createHmac("sha256", "s").update(raw).digest("hex")}`;
    expect(validSignature(raw, good, "s")).toBe(true);
    expect(validSignature(raw, good, "other")).toBe(false);
    expect(validSignature(Buffer.from('{"a":2}'), good, "s")).toBe(false);
    expect(validSignature(raw, undefined, "s")).toBe(false);
    expect(validSignature(raw, "sha256=zz", "s")).toBe(false);
  });

  it("reads text and media messages; skips statuses and other objects", async () => {
    const [text] = webhookMessages(body({ from: "491701", id: "wamid.1", timestamp: "1700000000", type: "text", text: { body: "hi" } }));
    const download = async (mediaId: string) => ({ bytes: new TextEncoder().encode(`media ${mediaId}`) });
    expect(toWhatsAppInbound(text!, download)).toEqual({
      id: "wamid.1",
      channelId: "491701",
      timestamp: "2023-11-14T22:13:20.000Z",
      sender: { id: "491701", username: "Ana_Lopez", displayName: "Ana Lopez", isBot: false },
      text: "hi",
      isMention: true,
      isDirect: true,
      files: [],
    });
    const [doc] = webhookMessages(body({ from: "491701", id: "wamid.2", timestamp: "1700000000", type: "document", document: { id: "77", filename: "a.pdf", mime_type: "application/pdf", caption: "see" } }));
    const docMessage = toWhatsAppInbound(doc!, download);
    expect(docMessage).toMatchObject({ text: "see", files: [{ filename: "a.pdf", mimeType: "application/pdf" }] });
    expect(new TextDecoder().decode((await docMessage!.files![0]!.download(100)).bytes)).toBe("media 77");
    const [voice] = webhookMessages(body({ from: "491701", id: "wamid.3", timestamp: "1700000000", type: "voice", voice: { id: "78" } }));
    expect(toWhatsAppInbound(voice!, download)?.files).toMatchObject([{ filename: "voice-78.ogg" }]);
    expect(webhookMessages({ object: "page", entry: [] })).toEqual([]);
    const statuses = { object: "whatsapp_business_account", entry: [{ changes: [{ field: "messages", value: { statuses: [{ id: "x", status: "read" }, { id: "y", status: "failed", recipient_id: "491701", errors: [{ code: 131047, title: "Re-engagement message" }] }] } }] }] };
    expect(webhookMessages(statuses)).toEqual([]);
    expect(failedDeliveries(statuses)).toEqual([{ messageId: "y", recipient: "491701", errors: [{ code: 131047, title: "Re-engagement message" }] }]);
  });
});
