/** Exit codes of the ledger's evidence commands. */
export const INTACT = 0
export const TAMPERED = 1
export const USAGE = 2
/** Nothing is wrong with what was shown, but some of it is not proven yet (rows not sealed). */
export const UNPROVEN = 3
