// The fake Slack workspace of libs/testing as a process for test/deploy/image-test.mjs, run in a
// container whose network namespace the Slack ingress container shares (the fake answers on
// 127.0.0.1 only, and so does the WebSocket URL it hands out). A small control API on port 8090
// (all interfaces) lets the test, outside, post as a user and read what the bot posted:
//   GET  /info                 -> { apiUrl, botToken, appToken, botUserId, openSockets }
//   POST /mention {text}       -> alice mentions the bot in #general
//   GET  /messages             -> #general's messages
//
//   node fake-slack-main.mjs <libs/testing/dist folder>
import { createServer } from "node:http";
import { join } from "node:path";

const { startFakeSlack } = await import(join(process.argv[2], "fake-slack.js"));
const slack = await startFakeSlack();

const json = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
createServer(async (req, res) => {
  try {
    if (req.method === "GET" && req.url === "/info") {
      return json(res, 200, { apiUrl: slack.apiUrl, botToken: slack.botToken, appToken: slack.appToken, botUserId: slack.botUserId, openSockets: slack.openSockets() });
    }
    if (req.method === "POST" && req.url === "/mention") {
      let body = "";
      for await (const chunk of req) body += chunk;
      const { text } = JSON.parse(body);
      return json(res, 200, slack.userMessage({ channel: "C0GENERAL", user: "U0ALICE", text: `<@${slack.botUserId}> ${text}` }));
    }
    if (req.method === "GET" && req.url === "/messages") return json(res, 200, slack.messages("C0GENERAL"));
    json(res, 404, { error: "not found" });
  } catch (e) {
    json(res, 500, { error: String(e) });
  }
}).listen(8090, "0.0.0.0", () => process.stdout.write(`${JSON.stringify({ apiUrl: slack.apiUrl })}\n`));

const stop = () => slack.close().then(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
