// mom's GitHub integration: a custom tool module (docs/tools.md "Custom tools") whose tools share
// one configuration, config.json `tools.settings.github` (README.md). Settings and the token are
// read again at each call; what is known of them now only fills in the schemas (the default repo,
// the allowed ones), so the module also loads before the operator configured it, and a call then
// says what to set.
import type { CustomToolApi, MomTool } from "@mom/tools";
import { getTool, type Known, searchTool } from "./read-tools.js";
import { loadSettings } from "./settings.js";
import { closeTool, commentTool, createTool, labelTool, removeLabelTool } from "./write-tools.js";

function known(api: CustomToolApi): Known {
  try {
    const s = loadSettings(api);
    return { ...(s.repo && { repo: s.repo }), ...(s.repos && { repos: s.repos }) };
  } catch {
    return {};
  }
}

export default function githubTools(api: CustomToolApi): MomTool[] {
  const k = known(api);
  return [searchTool(api, k), getTool(api, k), commentTool(api, k), labelTool(api, k), createTool(api, k), closeTool(api, k), removeLabelTool(api, k)] as MomTool[];
}
