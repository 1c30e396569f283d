import { readFileSync } from 'node:fs';

/** A file an option names that is missing or unreadable, or makes no valid TLS setup. */
export class TlsFilesError extends Error {}

/** Reads the file `option` names; the error names both. */
export function readOptionFile(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new TlsFilesError(`${option}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
