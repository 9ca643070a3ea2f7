import { foldName } from './git-guard.js';

/**
 * Files and directories from the box that a common host tool may act on by itself once the copy
 * is opened or entered. They are delivered (they are part of the repo) and reported as warnings,
 * so the user knows what to vet before trusting the folder.
 */
const FILE_RULES: { name: string; parent?: string; reason: string }[] = [
  { name: '.envrc', reason: 'direnv runs it on entering the directory once allowed' },
  { name: 'tasks.json', parent: '.vscode', reason: 'VS Code tasks (runOn folderOpen runs one on opening)' },
  {
    name: 'settings.json',
    parent: '.vscode',
    reason: 'VS Code settings can point interpreters, git and the terminal at files in the copy',
  },
  { name: 'launch.json', parent: '.vscode', reason: 'VS Code launch configurations run programs' },
  { name: '.devcontainer.json', reason: 'dev container initializeCommand runs on the host' },
  { name: '.lfsconfig', reason: 'git-lfs settings (endpoints) used by git-lfs in the copy' },
  { name: '.gitconfig', reason: 'a git config: an include of it runs the commands it names' },
  { name: 'mise.toml', reason: 'mise runs its hooks and env scripts on entering once trusted' },
  { name: '.mise.toml', reason: 'mise runs its hooks and env scripts on entering once trusted' },
  {
    name: '.yarnrc.yml',
    reason: 'yarn runs the yarnPath and plugins it names on any yarn command, `yarn --version` too',
  },
  { name: '.yarnrc', reason: 'yarn 1 runs the yarn-path it names on any yarn command' },
  { name: '.pnpmfile.cjs', reason: 'pnpm runs it on every install, with --ignore-scripts too' },
];

/** Files known by their extension: `.code-workspace` opens with its own settings and tasks. */
const SUFFIX_RULES: { suffix: string; reason: string }[] = [
  {
    suffix: '.code-workspace',
    reason: 'a VS Code workspace: its settings and tasks act as .vscode ones when it is opened',
  },
];

const DIRECTORY_RULES: { name: string; reason: string }[] = [
  { name: '.husky', reason: 'git hooks that husky installs as core.hooksPath on npm install' },
  { name: '.devcontainer', reason: 'dev container initializeCommand runs on the host' },
  { name: '.githooks', reason: 'git hooks, run if core.hooksPath is set to them' },
  {
    name: '.idea',
    reason: 'JetBrains project settings: startup tasks and run configurations run once trusted',
  },
];

/** The name of the attributes file whose content decides whether it is reported. */
export const GITATTRIBUTES = '.gitattributes';

/** An attribute selecting a filter, diff or merge driver (macro definitions included). */
const DRIVER_ATTRIBUTE = /(?:^|\s)(?:filter|diff|merge)=\S/m;

/** Why the entry at `path` (tar components) is worth a warning, or undefined. */
export function autorunReason(path: string[], isDirectory: boolean): string | undefined {
  const name = foldName(path.at(-1) ?? '');
  if (isDirectory) return DIRECTORY_RULES.find((rule) => rule.name === name)?.reason;
  const parent = path.length > 1 ? foldName(path.at(-2) ?? '') : undefined;
  return (
    FILE_RULES.find((rule) => rule.name === name && (rule.parent === undefined || rule.parent === parent))
      ?.reason ?? SUFFIX_RULES.find((rule) => name.endsWith(rule.suffix))?.reason
  );
}

/** The warning for a `.gitattributes` with this content, or undefined when it names no driver. */
export function gitattributesReason(content: string): string | undefined {
  return DRIVER_ATTRIBUTE.test(content)
    ? 'selects git filter/diff/merge drivers (run by git from your own git config, e.g. git-lfs)'
    : undefined;
}
