import { describe, expect, it } from "@jest/globals";
import { isNewSessionCommand, isStopCommand } from "./stop-command.js";

describe("isStopCommand", () => {
  it.each(["stop", "Stop", " STOP! ", "@mom stop", "@mom @other stop."])("%j stops", (t) => expect(isStopCommand(t)).toBe(true));
  it.each(["stop the build", "don't stop", "stopwatch", "", "@mom"])("%j does not", (t) => expect(isStopCommand(t)).toBe(false));
});

describe("isNewSessionCommand", () => {
  it.each(["/new", " /NEW ", "@mom /new"])("%j starts a new session", (t) => expect(isNewSessionCommand(t)).toBe(true));
  it.each(["/new session please", "new", "/news", "what is /new?", ""])("%j does not", (t) => expect(isNewSessionCommand(t)).toBe(false));
});
