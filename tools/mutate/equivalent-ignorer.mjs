// The Stryker ignorer that reports the mutants tools/mutate/equivalent-mutants.mjs lists as Ignored, with
// their reasons (`ignorers` and `appendPlugins` in stryker.config.mjs). Stryker asks it about every syntax
// node of a mutated file; it answers for the node whose text is an entry's code, at the place the entry
// names, and Stryker ignores every mutant of that node and of the nodes inside it.
import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';
import { EQUIVALENT_MUTANTS, ignoreMessage, locate } from './equivalent-mutants.mjs';

/** Per mutated file (its absolute name): the entries' nodes, by their start offset. */
const targetsByFile = new Map();

/** The ignorer: an ignore message for the node an entry names, nothing for any other node. */
export const equivalentMutantsIgnorer = {
  shouldIgnore(path) {
    const file = path.hub?.file;
    const fileName = file?.opts?.filename;
    if (typeof fileName !== 'string' || typeof path.node.start !== 'number') return undefined;
    const target = targetsOf(fileName, file.code).get(path.node.start);
    return target !== undefined && target.end === path.node.end ? target.message : undefined;
  },
};

function targetsOf(fileName, text) {
  let targets = targetsByFile.get(fileName);
  if (targets === undefined) {
    targets = new Map();
    for (const entry of EQUIVALENT_MUTANTS.filter((candidate) => fileName.replaceAll('\\', '/').endsWith(`/${candidate.file}`))) {
      const place = locate(text, entry);
      // A stale entry stops the run: the mutants it meant would be reported as survivors, or worse, go unnoticed.
      if ('problem' in place) throw new Error(`tools/mutate/equivalent-mutants.mjs: the entry for ${entry.file} (${entry.code}): ${place.problem}`);
      targets.set(place.start, { end: place.end, message: ignoreMessage(entry) });
    }
    targetsByFile.set(fileName, targets);
  }
  return targets;
}

export const strykerPlugins = [declareValuePlugin(PluginKind.Ignore, 'equivalent-mutants', equivalentMutantsIgnorer)];
