import { type ResolvedModel, resolveModel } from "@mom/agent";
import { type LoadedConfig, parseModelRef, type ThinkingLevel } from "@mom/config";

export interface ChannelModel {
  resolved: ResolvedModel;
  thinkingLevel: ThinkingLevel;
}

/**
 * The model and thinking level of each channel: `channels["<adapter>/<id>"]` in config.json over
 * the global `model`/`thinkingLevel`. Every model named anywhere is resolved when the runner
 * starts, so a typo or a missing key stops the runner at once instead of failing one channel later.
 */
export class ModelCatalog {
  private readonly byRef = new Map<string, ResolvedModel>();

  constructor(
    private readonly loaded: LoadedConfig,
    hasProfile: (provider: string) => boolean = () => false,
  ) {
    const { config } = loaded;
    for (const ref of new Set([config.model, ...Object.values(config.channels).flatMap((c) => (c.model ? [c.model] : []))])) {
      const { provider, modelId } = parseModelRef(ref);
      this.byRef.set(ref, resolveModel(provider, modelId, loaded.paths, hasProfile));
    }
  }

  forChannel(qualifiedId: string): ChannelModel {
    const { config } = this.loaded;
    const settings = config.channels[qualifiedId] ?? {};
    return {
      resolved: this.byRef.get(settings.model ?? config.model)!,
      thinkingLevel: settings.thinkingLevel ?? config.thinkingLevel,
    };
  }
}
