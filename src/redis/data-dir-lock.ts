// The data dir belongs to one server at a time: the one whose embedded redis-server keeps its
// data there. A second `holdfast serve` on it would take the first one's redis-server for a
// leftover (src/redis/embedded.ts stops those) and SIGTERM it. So the server holds a lock file in
// the data dir for its whole life, and a second one is refused before it kills or starts anything.
//
// The file holds the owner's pid, the start time the kernel gives that process and the address it
// serves on. It is made whole in one step (written beside, then hard-linked into place: the link
// fails if the file exists), so a reader never sees half a record. It is stale once its owner is
// gone (a SIGKILLed server leaves it behind): no process with that pid, or one started at another
// time (the pid was reused). A stale file is moved aside and checked to be the very file judged
// stale (its inode) before a new one is linked in: two servers starting at once after a crash
// cannot both take it.
import { closeSync, fstatSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** The lock file, in the data dir (beside the embedded Redis's own `redis/` folder). */
export const LOCK_FILE = 'holdfast.lock';

/** What the lock file says about the server that holds the data dir. */
export interface DataDirOwner {
  pid: number;
  /** The kernel's start time of that process (/proc/PID/stat), to tell a reused pid; absent off Linux. */
  started?: string;
  host: string;
  /** The address the owner serves gRPC on. */
  listen: string;
}

/** Another server holds the data dir: its message is the one line a user sees. */
export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly owner: DataDirOwner,
  ) {
    const where = owner.host === hostname() ? '' : ` on host ${owner.host}`;
    super(
      `data dir ${dataDir} is in use by another holdfast serve (pid ${owner.pid}${where}, listening on ${owner.listen}): stop that server, or give this one another --data-dir`,
    );
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Says where this server now listens (the port it was given for :0). */
  update(listen: string): void;
  /** Gives the data dir up (a stop, a refused start). Once only; a later call does nothing. */
  release(): void;
}

/**
 * What the kernel says of `pid` (/proc/PID/stat): its start time (field 22) and whether it has
 * exited (a zombie, Z or X, waiting for its parent, or PID 1 for an orphan, to reap it: a
 * SIGKILLed server stays one until then). Undefined without /proc or such a process.
 */
function procStat(pid: number): { started: string; exited: boolean } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { started: fields[19], exited: fields[0] === 'Z' || fields[0] === 'X' };
  } catch {
    return undefined;
  }
}

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // another user's process: it exists
  }
}

/** Whether the server the record names may still be running. Another host's cannot be checked: it may. */
function mayBeAlive(owner: DataDirOwner): boolean {
  if (owner.host !== hostname()) return true;
  if (!exists(owner.pid)) return false;
  const stat = procStat(owner.pid);
  if (!stat) return true; // no /proc here: the pid exists, and is taken for the owner
  return !stat.exited && (owner.started === undefined || stat.started === owner.started);
}

function parseOwner(text: string): DataDirOwner | undefined {
  try {
    const owner = JSON.parse(text) as DataDirOwner;
    return Number.isSafeInteger(owner.pid) && owner.pid > 0 && typeof owner.host === 'string' && typeof owner.listen === 'string' ? owner : undefined;
  } catch {
    return undefined;
  }
}

/** The record at `path` and its inode, or undefined when there is no file there any more. */
function readLockFile(path: string): { owner?: DataDirOwner; ino: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return { owner: parseOwner(readFileSync(fd, 'utf8')), ino: fstatSync(fd).ino };
  } finally {
    closeSync(fd);
  }
}

/**
 * Moves the stale file with inode `ino` out of the way. False when the file there had already
 * been replaced by another server's (it is put back): that server holds the data dir now.
 */
function removeStale(path: string, ino: number): boolean {
  const aside = `${path}.stale-${process.pid}`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true; // someone else moved it: try again
    throw err;
  }
  if (statSync(aside).ino === ino) {
    unlinkSync(aside);
    return true;
  }
  try {
    linkSync(aside, path);
  } catch {
    // A third server linked its own in between: it holds the data dir, as the check below will say.
  }
  unlinkSync(aside);
  return false;
}

/**
 * Takes the data dir for this process, or throws DataDirInUse naming the server that holds it.
 * A lock file left by a server that is gone (SIGKILL) is taken over.
 */
export function lockDataDir(dataDir: string, listen: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  const record = (address: string): DataDirOwner => ({ pid: process.pid, started: procStat(process.pid)?.started, host: hostname(), listen: address });
  const draft = `${path}.${process.pid}.new`;
  writeFileSync(draft, `${JSON.stringify(record(listen))}\n`);
  try {
    for (let attempt = 1; ; attempt++) {
      // Each turn another server took or gave up the lock file: a few are plenty.
      if (attempt > 5) throw new Error(`cannot lock data dir ${dataDir}: ${path} keeps changing (servers starting on it at once?)`);
      try {
        linkSync(draft, path);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const found = readLockFile(path);
      if (!found) continue; // its owner just gave it up
      // An unreadable record is no server's: only a whole record is ever linked into place.
      if (found.owner && mayBeAlive(found.owner)) throw new DataDirInUse(dataDir, found.owner);
      if (!removeStale(path, found.ino)) {
        const now = readLockFile(path);
        if (now?.owner) throw new DataDirInUse(dataDir, now.owner);
      }
    }
  } finally {
    unlinkSync(draft);
  }
  let held = true;
  return {
    path,
    update(address) {
      if (!held) return;
      // Replaced whole (a rename), never truncated: a half record would read as no server's.
      writeFileSync(draft, `${JSON.stringify(record(address))}\n`);
      renameSync(draft, path);
    },
    release() {
      if (!held) return;
      held = false;
      const found = readLockFile(path);
      if (found?.owner?.pid === process.pid) unlinkSync(path);
    },
  };
}
