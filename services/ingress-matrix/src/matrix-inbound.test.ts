import { describe, expect, it } from "@jest/globals";
import { markdownToHtml } from "@mom/ingress-sdk";
import { type MatrixEvent, mentionsAsUsernames, mentionsBot, pillsAsUsernames, toMatrixInbound, withoutReplyFallback } from "./matrix-inbound.js";
import { matrixDialect, pingedIn } from "./matrix-surface.js";

const bot = { userId: "@mom:example.org", displayName: "mom" };
const asked: string[] = [];
const media = { download: async (mxc: string) => (asked.push(mxc), { bytes: new Uint8Array(3) }) };
const ev = (content: Record<string, unknown>, over: Partial<MatrixEvent> = {}): MatrixEvent => ({ event_id: "$e1", type: "m.room.message", sender: "@ana:example.org", origin_server_ts: 1_700_000_000_000, content, ...over });

describe("matrix inbound", () => {
  it("a mention is m.mentions when the client sends it; else the user id, a pill or the display name as a word", () => {
    expect(mentionsBot({ body: "mom: hi", "m.mentions": { user_ids: ["@mom:example.org"] } }, bot)).toBe(true);
    // m.mentions present and without the bot: the name in the text does not count (intentional mentions).
    expect(mentionsBot({ body: "ask mom later", "m.mentions": {} }, bot)).toBe(false);
    expect(mentionsBot({ body: "@MOM:example.org look" }, bot)).toBe(true);
    expect(mentionsBot({ body: "hey you", formatted_body: '<a href="https://matrix.to/#/@mom:example.org">you</a>' }, bot)).toBe(true);
    expect(mentionsBot({ body: "Mom, look" }, bot)).toBe(true);
    expect(mentionsBot({ body: "one moment" }, bot)).toBe(false);
    expect(mentionsBot({ body: "a.b (c+d)?" }, { userId: "@x:y", displayName: "(c+d)?" })).toBe(true);
  });

  it("converts a message in a thread, with user ids as @usernames and without an old client's reply fallback", () => {
    const m = toMatrixInbound("!r:example.org", ev({ msgtype: "m.text", body: "> <@bob:example.org> before\n\nthanks @bob:example.org, ping mom", "m.relates_to": { rel_type: "m.thread", event_id: "$root", is_falling_back: false, "m.in_reply_to": { event_id: "$x" } } }), bot, { isDirect: false, displayName: "Ana Lopez" }, media);
    expect(m).toEqual({
      id: "$e1",
      channelId: "!r:example.org",
      timestamp: "2023-11-14T22:13:20.000Z",
      sender: { id: "@ana:example.org", username: "ana", displayName: "Ana Lopez", isBot: false },
      text: "thanks @bob, ping mom",
      rawText: "> <@bob:example.org> before\n\nthanks @bob:example.org, ping mom",
      files: [],
      isMention: true,
      isDirect: false,
      replyTo: "$root",
    });
    expect(withoutReplyFallback("> quoted\nno blank", { "m.relates_to": { "m.in_reply_to": { event_id: "$x" } } })).toBe("no blank");
    expect(mentionsAsUsernames("mail ana@example.org, or @ana:example.org:8448 (@bob:example.org)")).toBe("mail ana@example.org, or @ana (@bob)");
  });

  it("pills are written @localpart as on every platform, so a leading 'mom: stop' is the stop command", () => {
    const pill = (id: string, name: string) => `<a href="https://matrix.to/#/${id}">${name}</a>`;
    expect(pillsAsUsernames("mom: stop", `${pill("@mom:example.org", "mom")}: stop`)).toBe("@mom stop");
    expect(pillsAsUsernames("ask Bob Baker and mom", `ask ${pill("@bob:example.org", "Bob Baker")} and ${pill("@mom:example.org", "mom")}`)).toBe("ask @bob and @mom");
    expect(pillsAsUsernames("no pills here", undefined)).toBe("no pills here");
    const m = toMatrixInbound("!r:example.org", ev({ msgtype: "m.text", body: "mom: stop", format: "org.matrix.custom.html", formatted_body: `${pill("@mom:example.org", "mom")}: stop`, "m.mentions": { user_ids: ["@mom:example.org"] } }), bot, { isDirect: false }, media);
    expect(m?.text).toBe("@mom stop");
  });

  it("a pill's name is rewritten where it stands as a word, not inside a longer word before it", () => {
    const pill = (id: string, name: string) => `<a href="https://matrix.to/#/${id}">${name}</a>`;
    expect(pillsAsUsernames("Edit the file, Ed", `Edit the file, ${pill("@ed:example.org", "Ed")}`)).toBe("Edit the file, @ed");
    expect(pillsAsUsernames("momentum matters, mom", `momentum matters, ${pill("@mom:example.org", "mom")}`)).toBe("momentum matters, @mom");
    // A name that is nowhere a word of the body (a client that wrote it otherwise) leaves the body as it is.
    expect(pillsAsUsernames("Edit it", `Edit it ${pill("@ed:example.org", "Ed")}`)).toBe("Edit it");
  });

  it("files: the filename, size and type, downloaded by their mxc URI; a body other than the filename is the caption; an encrypted file is not taken", async () => {
    const withCaption = toMatrixInbound("!r:x", ev({ msgtype: "m.image", body: "look at this", filename: "cat.png", url: "mxc://x/abc", info: { size: 3, mimetype: "image/png" } }), bot, { isDirect: true }, media);
    expect(withCaption).toMatchObject({ text: "look at this", files: [{ filename: "cat.png", size: 3, mimeType: "image/png" }], isMention: true, isDirect: true });
    await withCaption!.files![0]!.download(10);
    expect(asked).toEqual(["mxc://x/abc"]);
    expect(toMatrixInbound("!r:x", ev({ msgtype: "m.file", body: "a.csv", url: "mxc://x/def" }), bot, { isDirect: false }, media)).toMatchObject({ text: "", files: [{ filename: "a.csv" }], isMention: false });
    expect(toMatrixInbound("!r:x", ev({ msgtype: "m.file", body: "secret.pdf", file: { url: "mxc://x/enc" } }), bot, { isDirect: false }, media)).toBeUndefined();
  });

  it("edits, other bots' notices and what is no message are not taken as new messages", () => {
    expect(toMatrixInbound("!r:x", ev({ msgtype: "m.text", body: "* fixed", "m.relates_to": { rel_type: "m.replace", event_id: "$e0" } }), bot, { isDirect: true }, media)).toBeUndefined();
    expect(toMatrixInbound("!r:x", ev({ msgtype: "m.location", body: "here", geo_uri: "geo:1,2" }), bot, { isDirect: true }, media)).toBeUndefined();
    expect(toMatrixInbound("!r:x", ev({ msgtype: "m.notice", body: "mom: build passed", "m.mentions": { user_ids: ["@mom:example.org"] } }), bot, { isDirect: false }, media)).toMatchObject({ sender: { isBot: true }, isMention: false });
  });

  it("outgoing: Markdown to HTML with the agent's own HTML shown as text; pills are who a message notifies", () => {
    expect(markdownToHtml("**hi** <b>x</b>\n\n- a\n- b").trim()).toBe("<p><strong>hi</strong> &lt;b&gt;x&lt;/b&gt;</p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>");
    const text = `Only ${matrixDialect.mention("@carol:example.org")} and ${matrixDialect.mention("@dan:example.org")} can decide this.`;
    expect(pingedIn(text)).toEqual(["@carol:example.org", "@dan:example.org"]);
    expect(markdownToHtml(text).trim()).toBe('<p>Only <a href="https://matrix.to/#/@carol:example.org">@carol:example.org</a> and <a href="https://matrix.to/#/@dan:example.org">@dan:example.org</a> can decide this.</p>');
  });
});
