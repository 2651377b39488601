export { whatsappIngress } from "./whatsapp-ingress.js";
export { WhatsAppSettings } from "./whatsapp-options.js";
