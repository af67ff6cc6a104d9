/** One equivalent mutant (or several of one piece of code), as tools/mutate/equivalent-mutants.mjs records it. */
export interface EquivalentMutant {
  /** The source file, from the repository root. */
  readonly file: string;
  /** Text that occurs once in the file; the entry means the first occurrence of `code` from there on. */
  readonly scope?: string;
  /** The source text of the mutated expression, exactly as in the file. */
  readonly code: string;
  /** The Stryker mutators whose mutants of that code are equivalent. */
  readonly mutators: readonly string[];
  /** Why no test can kill them; the mutation report shows it. */
  readonly reason: string;
}

export declare const EQUIVALENT_MUTANTS: readonly EquivalentMutant[];

export declare function locate(text: string, entry: EquivalentMutant): { start: number; end: number } | { problem: string };

export declare function ignoreMessage(entry: EquivalentMutant): string;
