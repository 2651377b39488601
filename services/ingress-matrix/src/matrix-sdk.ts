// matrix-bot-sdk requires its end-to-end encryption engine, @matrix-org/matrix-sdk-crypto-nodejs,
// when it is loaded, and that package is only a loader for a native library its postinstall script
// downloads from GitHub. Where install scripts do not run (npm's allowScripts, `--ignore-scripts`,
// an image built offline) the library is missing and merely loading matrix-bot-sdk throws
// "Cannot find module '@matrix-org/matrix-sdk-crypto-nodejs-linux-x64-gnu'" — although this ingress
// never encrypts (encrypted rooms are refused, docs/matrix.md) and never creates a CryptoClient.
// So when the engine cannot be loaded, its module is replaced (through Node's module hooks) by one
// that throws as soon as anything of it is used, saying why.
import { createRequire, registerHooks } from "node:module";
import { pathToFileURL } from "node:url";

export type MatrixSdk = typeof import("matrix-bot-sdk");

const CRYPTO = "@matrix-org/matrix-sdk-crypto-nodejs";

export const NO_CRYPTO_ENGINE =
  "end-to-end encryption is not available: the mom Matrix ingress refuses encrypted rooms and runs without the native @matrix-org/matrix-sdk-crypto-nodejs library";

// CommonJS, as the module it stands in for; `__esModule` and symbols are read by loaders, not by matrix-bot-sdk's code.
const STAND_IN = `module.exports = new Proxy({}, { get(_, name) { if (typeof name !== "string" || name === "__esModule" || name === "then") return undefined; throw new Error(${JSON.stringify(NO_CRYPTO_ENGINE)} + " (used: " + name + ")"); } });`;

let loading: Promise<MatrixSdk> | undefined;

/** matrix-bot-sdk, loaded once; with the crypto engine's stand-in when the native library is absent. */
export function loadMatrixSdk(): Promise<MatrixSdk> {
  loading ??= (async () => {
    const sdkRequire = createRequire(createRequire(import.meta.url).resolve("matrix-bot-sdk"));
    try {
      sdkRequire(CRYPTO);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw err;
      const url = pathToFileURL(sdkRequire.resolve(CRYPTO)).href;
      registerHooks({
        load: (u, context, next) => (u === url ? { format: "commonjs", source: STAND_IN, shortCircuit: true } : next(u, context)),
      });
    }
    return import("matrix-bot-sdk");
  })();
  return loading;
}
