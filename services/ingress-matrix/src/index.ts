export { matrixIngress } from "./matrix-ingress.js";
export { MatrixSettings } from "./matrix-options.js";
