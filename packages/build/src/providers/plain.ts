import type { ProviderRecipe } from './provider-recipe.js';

/** No known provider: the base image without dependencies. */
export const plainRecipe: ProviderRecipe = {
  env: () => [],
  install: () => ({
    install: [],
    installEnv: [],
    notes: ['no known provider: the base image without dependencies'],
  }),
  linkNodeModules: false,
};
