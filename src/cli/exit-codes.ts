// The exit codes of the client commands, besides a command's own exit code under `holdfast exec`.
export const EXIT = {
  /** A gRPC error, a bad flag or anything unexpected. */
  FAILED: 1,
  /** The lock was not granted within --wait-ms (EX_TEMPFAIL: try again later). */
  NOT_ACQUIRED: 75,
  /** `exec`: the lease was lost while COMMAND ran, so it was stopped. */
  LEASE_LOST: 76,
  /** `exec`: COMMAND could not be run (as a shell says: not executable). */
  CANNOT_RUN: 126,
  /** `exec`: COMMAND was not found. */
  NOT_FOUND: 127,
} as const;
