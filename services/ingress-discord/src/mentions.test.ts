import { describe, expect, it } from "@jest/globals";
import { idsForMentions } from "@mom/ingress-sdk";
import { namesForMentions } from "./mentions.js";
import { isStopCommand } from "@mom/ingress-sdk";

describe("namesForMentions", () => {
  const names = {
    user: (id: string) => ({ "1": "mom", "2": "ana" })[id],
    role: (id: string) => ({ "5": "admins" })[id],
    channel: (id: string) => ({ "7": "general" })[id],
  };
  it("turns user, role and channel mentions into names, old-style <@!id> too", () => {
    expect(namesForMentions("<@1> ask <@!2> in <#7>, cc <@&5>", names)).toBe("@mom ask @ana in #general, cc @admins");
  });
  it("leaves unknown ids as Discord wrote them", () => {
    expect(namesForMentions("<@99> <#98> <@&97>", names)).toBe("<@99> <#98> <@&97>");
  });
});

describe("idsForMentions", () => {
  const idOf = (u: string) => ({ ana: "2", "bob.smith": "3" })[u.toLowerCase()];
  it("turns known @names into <@id>, keeping punctuation after them", () => {
    expect(idsForMentions("thanks @ana. and @Bob.Smith, hi @nobody", idOf)).toBe("thanks <@2>. and <@3>, hi @nobody");
  });
  it("leaves code, e-mail addresses and existing mentions alone", () => {
    expect(idsForMentions("`@ana` ana@ana.com <@2>\n```\n@ana\n```\n@ana", idOf)).toBe("`@ana` ana@ana.com <@2>\n```\n@ana\n```\n<@2>");
  });
});


describe("isStopCommand", () => {
  it("matches stop with or without a leading mention", () => {
    expect(isStopCommand("@mom stop")).toBe(true);
    expect(isStopCommand("Stop!")).toBe(true);
    expect(isStopCommand("stop the build")).toBe(false);
  });
});
