/**
 * Fair delivery: the latency of one account's deliveries (publish to arrival at its receiver, p50
 * and p99) through the webhook service's memory queue, alone and while another account's 16
 * endpoints never answer (each attempt held for the whole `timeoutMs`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebhookService, httpTransport, MemorySubscriptionRepository } from 'api-conventions';

const GOOD_EVENTS = 100;
const EVERY_MS = 20;
const HOSTILE_ENDPOINTS = 16;
const HOSTILE_EVENTS = 1;
const TIMEOUT_MS = 5_000;

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** One run: the good account's latencies in ms, with or without the hostile account. */
async function latencies(hostile: boolean): Promise<number[]> {
  const arrived = new Map<string, number>();
  let wake: () => void = () => undefined;
  const good = await listen((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived.set(String(req.headers['webhook-id']), performance.now());
      res.writeHead(204).end();
      wake();
    });
  });
  // Never answers: each attempt is held until the timeout.
  const blackHole = await listen((req) => req.resume());
  const service = createWebhookService({
    repository: new MemorySubscriptionRepository(),
    identify: (request) => {
      const account = request.headers.get('x-account');
      return account === null ? undefined : { clientId: 'bench', accountCode: account };
    },
    pollIntervalMs: 0,
    endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
    delivery: { transport: httpTransport({ allow: ['127.0.0.1'] }), timeoutMs: TIMEOUT_MS },
    onError: () => undefined,
  });
  const subscribe = async (account: string, endpointUrl: string) => {
    const response = await service.fetch(
      new Request('http://api.test/v1/subscriptions', {
        method: 'POST',
        headers: { 'x-account': account, 'content-type': 'application/json' },
        body: JSON.stringify({ endpointUrl, events: ['reservation/*'] }),
      }),
    );
    if (response.status !== 201) throw new Error(`subscribe: ${response.status}`);
  };
  try {
    await service.start();
    if (hostile) {
      for (let i = 0; i < HOSTILE_ENDPOINTS; i++)
        await subscribe('HOSTILE', `${blackHole.url}/${i}`);
      for (let i = 0; i < HOSTILE_EVENTS; i++) {
        await service.publish({ accountCode: 'HOSTILE', kind: 'reservation/created' });
      }
    }
    await subscribe('GOOD', `${good.url}/in`);
    const published = new Map<string, number>();
    for (let i = 0; i < GOOD_EVENTS; i++) {
      const at = performance.now();
      const { id } = await service.publish({ accountCode: 'GOOD', kind: 'reservation/created' });
      published.set(id, at);
      await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
    }
    while (arrived.size < GOOD_EVENTS) await new Promise<void>((resolve) => (wake = resolve));
    return [...published].map(([id, at]) => (arrived.get(id) as number) - at);
  } finally {
    await stop(blackHole.server);
    await stop(good.server);
    await service.close();
  }
}

/** The nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number;
}

export async function run(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const hostile of [false, true]) {
    const ms = (await latencies(hostile)).sort((a, b) => a - b);
    const figures = {
      p50: Math.round(percentile(ms, 0.5) * 10) / 10,
      p99: Math.round(percentile(ms, 0.99) * 10) / 10,
      max: Math.round((ms.at(-1) as number) * 10) / 10,
    };
    const name = hostile ? 'withHostileAccount' : 'alone';
    console.error(
      `${name}: ${GOOD_EVENTS} deliveries of the other account, p50 ${figures.p50} ms, p99 ${figures.p99} ms, max ${figures.max} ms`,
    );
    out[name] = figures;
  }
  return out;
}
