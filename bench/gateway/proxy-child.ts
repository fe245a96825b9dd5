/** Starts the gateway (role `gateway`) or the bare reference proxy (role `bare`) in a child process. */
import type { ChildProcess } from 'node:child_process';
import { forkRole, stopChild, UPSTREAM_ENV } from './processes.js';
import { PROFILE_ENV } from './settings.js';

export interface ProxyProcess {
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Resolves once the child reports the port it listens on. */
export async function startProxyChild(role: 'gateway' | 'bare', upstreamPort: number): Promise<ProxyProcess> {
  const profileDir = process.env[PROFILE_ENV];
  const execArgv: string[] = [];
  if (profileDir && role === 'gateway') execArgv.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  const child = forkRole(role, { [UPSTREAM_ENV]: String(upstreamPort) }, execArgv);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${role} child did not start in 30 s`)), 30_000);
    child.once('exit', (code) => reject(new Error(`the ${role} child exited with ${code}`)));
    child.on('message', (message: { type?: string; port?: number }) => {
      if (message.type === 'ready' && typeof message.port === 'number') {
        clearTimeout(timer);
        resolve(message.port);
      }
    });
  });
  return {
    port,
    child,
    async stop() {
      if (child.connected) child.send({ type: 'stop' });
      // A normal exit lets --cpu-prof write its profile.
      await stopChild(child, 'SIGCONT', 5_000);
    },
  };
}

/** In a proxy child: tells the parent the port, and stops on its `stop` message or when it goes away. */
export function serveUntilStopped(port: number, stop: () => Promise<void>): void {
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'stop') void stop();
  });
  process.on('disconnect', () => void stop());
  process.send?.({ type: 'ready', port });
}
