// Scales one image for the read tool with pi's own resizeImage (photon, WebAssembly), in a worker
// thread: decoding a picture of millions of pixels takes seconds of CPU, which on the runner's
// event loop would stall every channel it serves. Plain JavaScript next to the package (not in
// src/) so that one file serves the built runner and the tests.
import { parentPort, workerData } from "node:worker_threads";

// pi does not export its image utilities; they sit next to its entry point.
const { resizeImage } = await import(new URL("./utils/image-resize.js", import.meta.resolve("@mariozechner/pi-coding-agent")).href);

const result = await resizeImage({ type: "image", data: workerData.data, mimeType: workerData.mimeType }).catch(() => null);
parentPort.postMessage(result);
