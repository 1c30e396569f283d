// The server's logger: pino JSON lines for log collectors; on a terminal, pino-pretty's
// coloured lines for the person watching.
import { setLogger } from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

export function serverLogger(level: string): Logger {
  if (!process.stdout.isTTY) return pino({ level });
  // sync: a line written just before process.exit must still reach the terminal.
  return pino({ level }, pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
}

/**
 * grpc-js's own log lines (errors only, unless GRPC_VERBOSITY asks for more) into the server's
 * log instead of raw on stderr. A bind failure is left out: the server says it in one line of its
 * own (src/net/listen.ts), with the cause grpc-js's line lacks.
 */
export function routeGrpcLogs(logger: Logger): void {
  const line = (args: unknown[]) => args.map(String).join(' ');
  setLogger({
    error: (...args: unknown[]) => {
      const text = line(args);
      if (!text.startsWith('No address added')) logger.warn({ grpc: text }, 'grpc-js reported an error');
    },
    info: (...args: unknown[]) => logger.info({ grpc: line(args) }, 'grpc-js'),
    debug: (...args: unknown[]) => logger.debug({ grpc: line(args) }, 'grpc-js'),
  });
}
