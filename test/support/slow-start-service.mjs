// A `mom` service's main in small: it keeps signals from its first line, takes 1.5 s to start,
// then serves until it is stopped. A test stops it while it starts.
import { keepSignalsWhileStarting, shutdownOn } from "../../services/cli/dist/shutdown.js";

keepSignalsWhileStarting();
process.stderr.write("starting\n");
const serving = setInterval(() => {}, 1000);
await new Promise((r) => setTimeout(r, 1500));
process.stderr.write("up\n");
await shutdownOn({
  closers: [
    async () => {
      clearInterval(serving);
      process.stderr.write("closed\n");
    },
  ],
});
