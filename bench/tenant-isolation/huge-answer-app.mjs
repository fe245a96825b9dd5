// The tenant-isolation bench's hostile http app (issue 29 item 3), run by the `local` runtime with the host's node:
// any POST is answered 200 `application/json` with a body of ANSWER_BYTES bytes, `{"blob":"xxx...x"}`, written 1 MiB
// at a time as the socket drains, so the app never holds the body (a 400 MB answer costs it 1 MiB). It stops
// writing when the connection closes (a server that reads answers only up to a limit). It prints a JSON line every
// 10 MiB and one at the end (the bench reads them from its log). GET /health answers 200.
// Env: PORT (given by the runtime), HOST (default 0.0.0.0), ANSWER_BYTES (default 400 MiB).

import { createServer } from 'node:http';

const MIB = 1024 * 1024;
const answerBytes = Number(process.env.ANSWER_BYTES ?? 400 * MIB);
/** A progress line this often, so that an answer cut by the bench's bound still says how far it got. */
const REPORT_EVERY = 10 * MIB;
const head = Buffer.from('{"blob":"');
const tail = Buffer.from('"}');
const filler = Buffer.alloc(MIB, 'x');
let answers = 0;

/** Resolves when the socket drained or closed. */
function drained(res) {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

async function answer(res) {
  const n = ++answers;
  let sent = 0;
  const report = (done) =>
    console.log(JSON.stringify({ message: 'answered', answer: n, bytes: sent, of: answerBytes, done }));
  const write = async (piece) => {
    sent += piece.length;
    if (!res.write(piece)) await drained(res);
  };
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': answerBytes });
  await write(head);
  let nextReport = REPORT_EVERY;
  for (let left = answerBytes - head.length - tail.length; left > 0 && !res.destroyed; ) {
    const piece = left >= filler.length ? filler : filler.subarray(0, left);
    left -= piece.length;
    await write(piece);
    if (sent >= nextReport) {
      report(false);
      nextReport += REPORT_EVERY;
    }
  }
  if (!res.destroyed) {
    sent += tail.length;
    res.end(tail);
  }
  report(true);
}

createServer((req, res) => {
  req.resume();
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(404).end();
    return;
  }
  answer(res).catch((error) =>
    console.log(JSON.stringify({ message: 'answer failed', error: String(error) })),
  );
}).listen(Number(process.env.PORT ?? 8000), process.env.HOST || '0.0.0.0');
