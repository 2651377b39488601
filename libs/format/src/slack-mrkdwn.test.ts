import { describe, expect, it } from "@jest/globals";
import { idsForMentions, linkMentions, markdownToMrkdwn, mrkdwnToText } from "./slack-mrkdwn.js";
import { splitMessage } from "./split-message.js";

const ZWSP = "\u200b";
const strip = (s: string) => s.split(ZWSP).join("");
const users: Record<string, string> = { alice: "U0ALICE", "bob.smith": "U0BOB" };
const userIdFor = (name: string) => users[name];

describe("markdownToMrkdwn", () => {
  it("converts emphasis, strike, inline code and links", () => {
    const out = strip(markdownToMrkdwn("**bold**, *italic*, _also_, ~~gone~~, `x`, [docs](https://example.com/a?b=1&c=2)"));
    expect(out).toBe("*bold*, _italic_, _also_, ~gone~, `x`, <https://example.com/a?b=1&c=2|docs>");
  });

  it("turns headings into bold lines and lists into bullets", () => {
    const out = strip(markdownToMrkdwn("# Title\n\n- one\n- two\n  - nested\n\n1. first\n2. second"));
    expect(out).toBe("*Title*\n\n•   one\n•   two\n    •   nested\n\n1.  first\n2.  second");
  });

  it("keeps code blocks as ``` blocks (no language) and escapes &, <, > inside them", () => {
    const out = markdownToMrkdwn("```sh\nif [ $a -lt 2 ] && echo <@U1> > out.txt; then :; fi\n```");
    expect(out).toBe("```\nif [ $a -lt 2 ] &amp;&amp; echo &lt;@U1&gt; &gt; out.txt; then :; fi\n```");
  });

  it("escapes control characters in text and inline code, so nothing pings by accident", () => {
    expect(markdownToMrkdwn("a < b & c > d, `<!channel>`")).toBe("a &lt; b &amp; c &gt; d, `&lt;!channel&gt;`");
  });

  it("turns hard line breaks into plain newlines", () => {
    expect(markdownToMrkdwn("line one\\\nline two  \nline three")).toBe("line one\nline two\nline three");
  });

  it("links @username to <@U…> for known users only, never inside code", () => {
    const out = markdownToMrkdwn("Thanks @alice and @bob.smith. @nobody is unknown; mail alice@example.com; `@alice`", { userIdFor });
    expect(out).toContain("Thanks <@U0ALICE> and <@U0BOB>. @nobody is unknown");
    expect(out).toContain("`@alice`");
    expect(out).not.toContain("<mailto:alice<@");
  });

  it("returns an empty string for blank input", () => {
    expect(markdownToMrkdwn("  \n")).toBe("");
  });

  it("long converted answers split into complete code blocks", () => {
    const code = Array.from({ length: 400 }, (_, i) => `echo ${i} && ls > f${i}`).join("\n");
    const chunks = splitMessage(markdownToMrkdwn(`Intro\n\n\`\`\`bash\n${code}\n\`\`\`\n\nDone.`), 3000);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(3000);
      expect((c.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    expect(chunks.join("\n")).toContain("echo 399 &amp;&amp; ls &gt; f399");
  });
});

describe("linkMentions", () => {
  it("idsForMentions: the same outside code only, names that start with an underscore too", () => {
    const idOf = (u: string) => ({ alice: "U0ALICE", _bot: "U0BOT" })[u];
    expect(idsForMentions("@alice `@alice` ```\n@alice\n``` @_bot", idOf)).toBe("<@U0ALICE> `@alice` ```\n@alice\n``` <@U0BOT>");
  });

  it("keeps trailing punctuation outside the mention", () => {
    expect(linkMentions("hi @alice.", userIdFor)).toBe("hi <@U0ALICE>.");
    expect(linkMentions("(@alice)", userIdFor)).toBe("(<@U0ALICE>)");
  });
});

describe("mrkdwnToText", () => {
  const names = { user: (id: string) => ({ U0ALICE: "alice" })[id], channel: (id: string) => ({ C0GEN: "general" })[id] };

  it("rewrites user and channel mentions with names", () => {
    expect(mrkdwnToText("<@U0ALICE> see <#C0GEN> and <#C0OTHER|random>, <@U0X>", names)).toBe("@alice see #general and #random, @U0X");
  });

  it("turns links into plain URLs or Markdown links and decodes entities", () => {
    expect(mrkdwnToText("<https://a.io/x?y=1&amp;z=2> <https://b.io|the docs> <mailto:x@y.z|x@y.z> a &lt; b &amp;&amp; c &gt; d")).toBe(
      "https://a.io/x?y=1&z=2 [the docs](https://b.io) x@y.z a < b && c > d",
    );
  });

  it("keeps special mentions readable", () => {
    expect(mrkdwnToText("<!here> <!channel> <!subteam^S1|@devs> <!date^1392734382^{date}|Feb 18>")).toBe("@here @channel @devs Feb 18");
  });
});
