import { describe, expect, it } from "@jest/globals";
import { isNewSessionCommand, isStopCommand, isStopJobsCommand } from "./stop-command.js";

describe("isStopCommand", () => {
  it.each(["stop", "Stop", " STOP! ", "@mom stop", "@mom @other stop."])("%j stops", (t) => expect(isStopCommand(t)).toBe(true));
  it.each(["stop the build", "don't stop", "stopwatch", "", "@mom"])("%j does not", (t) => expect(isStopCommand(t)).toBe(false));
});

describe("isStopJobsCommand", () => {
  it.each(["stop jobs", "Stop Jobs!", "@mom stop jobs", "@mom stop all jobs."])("%j kills the jobs", (t) => expect(isStopJobsCommand(t)).toBe(true));
  it.each(["stop", "stop the jobs from failing", "stop job", "jobs", "don't stop jobs"])("%j does not", (t) => expect(isStopJobsCommand(t)).toBe(false));
  it("is not a plain stop, so ingresses that treat stop specially send it on as a message", () => expect(isStopCommand("stop jobs")).toBe(false));
});

describe("isNewSessionCommand", () => {
  it.each(["/new", " /NEW ", "@mom /new"])("%j starts a new session", (t) => expect(isNewSessionCommand(t)).toBe(true));
  it.each(["/new session please", "new", "/news", "what is /new?", ""])("%j does not", (t) => expect(isNewSessionCommand(t)).toBe(false));
});
