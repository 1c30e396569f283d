// The server's logger: pino JSON lines for log collectors; on a terminal, pino-pretty's
// coloured lines for the person watching.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

export function serverLogger(level: string): Logger {
  if (!process.stdout.isTTY) return pino({ level });
  // sync: a line written just before process.exit must still reach the terminal.
  return pino({ level }, pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
}
