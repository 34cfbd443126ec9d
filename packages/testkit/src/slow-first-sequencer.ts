import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Starts the files that wait longest first: fault and end-to-end files (real processes, a
 * browser, outages and backoffs on the wall clock), then integration files, then unit files —
 * each tier in the order vitest would pick (failed, then slowest by the last run, then largest). On a fresh
 * clone there is no last run, and file size says little about how long a file waits.
 */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => ({ faults: 0, e2e: 0, int: 1 })[f.project.name as 'faults' | 'e2e' | 'int'] ?? 2
    const sorted = await super.sort(files)
    return sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index)
      .map(({ file }) => file)
  }
}
