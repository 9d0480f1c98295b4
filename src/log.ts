// The process logger: pino, JSON lines on stderr (stdout is for command output), with
// Felix's severities; human-readable lines instead when stderr is a terminal (or
// PALISADE_LOG_FORMAT=pretty; =json forces JSON). Synchronous writes, so nothing is lost
// when the process exits right after logging (the restart exit, a fatal error).
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** Felix's LogSeverityScreen values -> pino levels. */
const LEVELS: Record<string, pino.LevelWithSilent> = {
  Trace: 'trace',
  Debug: 'debug',
  Info: 'info',
  Warning: 'warn',
  Error: 'error',
  Fatal: 'fatal',
  None: 'silent',
};

export function levelFor(severity: string): pino.LevelWithSilent {
  return LEVELS[severity] ?? 'info';
}

export function createLogger(opts: { severity?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      level: levelFor(opts.severity ?? 'Info'),
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? defaultDestination(),
  );
}

function defaultDestination(): pino.DestinationStream {
  const format = process.env.PALISADE_LOG_FORMAT;
  const human = format === 'pretty' || (format !== 'json' && process.stderr.isTTY);
  if (!human) return pino.destination({ fd: 2, sync: true });
  return pretty({
    destination: 2,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
  });
}

/** A logger that drops everything (library default, tests). */
/**
 * The one convention for errors in log lines, as Felix's logrus WithError: the field
 * `error` holds the message (with `code` / `errno` beside it where the error has them).
 */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const silentLogger: Logger = pino({ level: 'silent' });
