// Redraws a picture in place in a terminal (`status --watch`): the alternate screen, cursor hidden,
// each frame drawn from the top; on Ctrl-C or SIGTERM the terminal is given back as it was and
// the process exits 0. Not a terminal (a pipe): each frame is printed after the last, plainly.

const ALTERNATE_SCREEN = '\x1b[?1049h\x1b[?25l';
const NORMAL_SCREEN = '\x1b[?25h\x1b[?1049l';
const HOME_AND_CLEAR = '\x1b[H\x1b[J';

export class Screen {
  private readonly tty = process.stdout.isTTY === true;
  private entered = false;

  /** Calls `onExit` (then exits 0) on Ctrl-C or SIGTERM, after the terminal is restored. */
  constructor(onExit: () => void) {
    const exit = () => {
      this.leave();
      onExit();
      process.exit(0);
    };
    process.once('SIGINT', exit);
    process.once('SIGTERM', exit);
  }

  draw(frame: string): void {
    if (!this.tty) {
      process.stdout.write(`${frame}\n`);
      return;
    }
    if (!this.entered) {
      process.stdout.write(ALTERNATE_SCREEN);
      this.entered = true;
    }
    process.stdout.write(HOME_AND_CLEAR + frame);
  }

  /** Gives the terminal back (the screen as it was before, the cursor shown). */
  leave(): void {
    if (!this.entered) return;
    process.stdout.write(NORMAL_SCREEN);
    this.entered = false;
  }
}

/** The terminal's width, or 100 columns when it is not a terminal. */
export function columns(): number {
  return process.stdout.columns || 100;
}
