import { describe, expect, it } from "@jest/globals";
import { isStopCommand } from "./stop-command.js";

describe("isStopCommand", () => {
  it.each(["stop", "Stop", " STOP! ", "@mom stop", "@mom @other stop."])("%j stops", (t) => expect(isStopCommand(t)).toBe(true));
  it.each(["stop the build", "don't stop", "stopwatch", "", "@mom"])("%j does not", (t) => expect(isStopCommand(t)).toBe(false));
});
