/** A real HTTP webhook receiver on 127.0.0.1, port 0, for the webhook outbox's tests: what it got, what it answers. */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  headers: IncomingMessage['headers'];
  body: string;
  url: string;
}

export interface WebhookReceiver {
  base: string;
  received: ReceivedWebhook[];
  /** The statuses it answers, in turn; 204 once they run out. */
  answers: number[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const answers: number[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      received.push({ headers: request.headers, body, url: request.url ?? '' });
      response.statusCode = answers.shift() ?? 204;
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
