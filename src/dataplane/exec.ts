// Running the iptables and ipset tools (Felix's transport, and the takeover of Felix's
// state): a command with its input on stdin, its output collected, never throwing.
import { spawn } from 'node:child_process';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The command is not installed. */
  missing?: boolean;
}

export function run(cmd: string, args: string[], input?: string, env?: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(env ? { env: { ...process.env, ...env } } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e: NodeJS.ErrnoException) =>
      resolve({ code: null, stdout, stderr: e.message, missing: e.code === 'ENOENT' }),
    );
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {}); // a command that exits before reading its input
    child.stdin.end(input ?? '');
  });
}
