/**
 * CPU time of the servers a suite starts, read from Linux's /proc: a process and its children (a
 * PostgreSQL server is a postmaster and a backend per connection). Elsewhere it reads 0.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** The fields of /proc/<pid>/stat after the command name, or undefined when it is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name, in parentheses, may hold spaces: the fields follow its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds used so far by `pid`, its children that have exited (and been waited for) and
 * those running now.
 */
export function treeCpuSeconds(pid: number): number {
  const root = statFields(pid);
  if (root === undefined) return 0;
  // From the state (field 3): ppid is 4th, utime 14th, stime 15th, cutime 16th, cstime 17th.
  const ticks = (fields: string[], from: number, to: number) =>
    fields.slice(from - 3, to - 2).reduce((sum, n) => sum + Number(n), 0);
  let total = ticks(root, 14, 17);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields !== undefined && Number(fields[1]) === pid) total += ticks(fields, 14, 15);
  }
  return total / TICKS;
}
