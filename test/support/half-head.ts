/** A client that sends half a request head and waits: how long a server takes to close its connection. */
import { once } from 'node:events';
import { connect } from 'node:net';

/** Milliseconds from sending a request line and one header (and nothing more) to 127.0.0.1:`port` to its close. */
export async function msUntilHalfHeadClosed(port: number): Promise<number> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  // Read what the server answers (a 408), so that its close is seen.
  socket.resume();
  await once(socket, 'connect');
  const start = performance.now();
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
  await once(socket, 'close');
  return performance.now() - start;
}
