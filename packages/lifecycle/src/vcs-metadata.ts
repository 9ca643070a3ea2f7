import { foldName } from './git-guard.js';

// Git is not the only version control tool that runs what its metadata says: `hg status` runs the
// hooks of `.hg/hgrc`, Sapling those of `.sl/config`, darcs the `ALL posthook` of
// `_darcs/prefs/defaults`, jj the pager and tools of `.jj/repo/config.toml`. A box writes these as
// easily as `.git/config`, and a shell prompt that shows the branch runs the tool on entering the
// folder. Unlike git's, no sanitised form is offered: they are always withheld.

/** Metadata entries of other VCS tools, by folded name, with the tool that would act on them. */
const OTHER_VCS: ReadonlyMap<string, string> = new Map([
  ['.hg', 'Mercurial would run the hooks and extensions of its hgrc'],
  ['.sl', 'Sapling would run the hooks of its config'],
  ['.jj', 'jj would run the programs its repo config names'],
  ['_darcs', 'darcs would run the hooks of its prefs'],
  ['.bzr', 'Bazaar would read its branch config'],
  ['.svn', 'Subversion would read its working-copy database'],
  ['.pijul', 'Pijul would read its config'],
  ['.fslckout', 'Fossil would open the repository it points to, with its settings'],
  ['_fossil_', 'Fossil would open the repository it points to, with its settings'],
]);

/**
 * Why a path component is the metadata of a VCS other than git (in any case, with the characters
 * HFS+ ignores or NTFS's trailing dots and spaces, as for `.git`), or undefined.
 */
export function otherVcsReason(name: string): string | undefined {
  const tool = OTHER_VCS.get(foldName(name).replace(/[. ]+$/, ''));
  return tool === undefined ? undefined : `VCS metadata withheld: ${tool} on the host`;
}
