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
      formatters: { level: (label) => ({ level: label }), log: (o) => clipFields(o, 0) as Record<string, unknown> },
      hooks: {
        logMethod(args, method) {
          // The message (the last string argument): it may quote input too.
          const i = args.length - 1;
          if (typeof args[i] === 'string') args[i] = clipText(args[i] as string, MAX_MESSAGE);
          method.apply(this, args);
        },
      },
    },
    opts.destination ?? defaultDestination(),
  );
}

/**
 * Everything a line holds is cut short, wherever it came from: a datastore key of 200 KB
 * (issue 51 D12), a value, a name echoed in a message. The limits are far above what a
 * line of ours needs.
 */
const MAX_FIELD = 1024;
const MAX_MESSAGE = 4096;
const MAX_ITEMS = 100;

function clipText(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}... (${s.length} characters)`;
}

function clipFields(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return clipText(v, MAX_FIELD);
  if (v === null || typeof v !== 'object' || v instanceof Error || depth > 4) return v;
  if (Array.isArray(v)) {
    const out = v.slice(0, MAX_ITEMS).map((x) => clipFields(x, depth + 1));
    if (v.length > MAX_ITEMS) out.push(`... (${v.length} items)`);
    return out;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = clipFields(x, depth + 1);
  return out;
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

/**
 * The one convention for errors in log lines, as Felix's logrus WithError: the field
 * `error` holds the message (with `code` / `errno` beside it where the error has them).
 */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A logger that drops everything (library default, tests). */
export const silentLogger: Logger = pino({ level: 'silent' });
