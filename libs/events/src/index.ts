// The event file format of events/ directories (what the scheduler fires and what the reminders
// integration writes): one parser, one notion of the next fire time, for every reader and writer.
export * from "./event-file.js";
export * from "./next-fire.js";
export * from "./schedule.js";
