import type { Provider } from '../provider.js';
import { goRecipe } from './go.js';
import { nodeRecipe } from './node/recipe.js';
import { plainRecipe } from './plain.js';
import type { ProviderRecipe } from './provider-recipe.js';
import { pythonRecipe } from './python/recipe.js';
import { rustRecipe } from './rust.js';

export type { ProviderInstall, ProviderRecipe } from './provider-recipe.js';

/** Each provider's part of the built-in recipe (recipe.ts puts them together). */
export const PROVIDER_RECIPES: Readonly<Record<Provider, ProviderRecipe>> = {
  node: nodeRecipe,
  python: pythonRecipe,
  go: goRecipe,
  rust: rustRecipe,
  plain: plainRecipe,
};
