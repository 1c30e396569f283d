// A raw Session stream over a real grpc-js channel (ts-proto stubs): send operations, await each
// answer by its op_id, see every message the server sent, and how the stream ended.
import { Metadata, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { type DeepPartial, type LockServiceClient, SessionRequest, type SessionResponse } from '../../gen/holdfast/v1/lock';

export interface SessionStream {
  call: ClientDuplexStream<SessionRequest, SessionResponse>;
  /** Every message received, in order. */
  received: SessionResponse[];
  /** Sends one operation (ts-proto fills in what is left out); returns its op_id. */
  send(request: DeepPartial<SessionRequest>): string;
  /** Sends an operation under a fresh op_id and resolves with its answer. */
  op(request: Omit<DeepPartial<SessionRequest>, 'opId'>): Promise<SessionResponse>;
  /** Resolves with the first message (already received or to come) that matches. */
  next(match: (response: SessionResponse) => boolean): Promise<SessionResponse>;
  answerTo(opId: string): Promise<SessionResponse>;
  /** How the stream ended. */
  ended: Promise<{ code: number; details: string }>;
}

export function openSession(client: LockServiceClient, metadata = new Metadata(), deadlineMs?: number): SessionStream {
  const call = client.session(metadata, deadlineMs ? { deadline: Date.now() + deadlineMs } : {});
  const received: SessionResponse[] = [];
  const waiting = new Set<() => void>();
  let nextId = 1;
  let over = false;
  call.on('data', (response: SessionResponse) => {
    received.push(response);
    for (const check of [...waiting]) check();
  });
  const ended = new Promise<{ code: number; details: string }>((resolve) => {
    call.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details }));
    call.on('status', (s) => s.code === 0 && resolve({ code: 0, details: s.details }));
  });
  void ended.then(() => {
    over = true;
    for (const check of [...waiting]) check();
  });
  const next = (match: (response: SessionResponse) => boolean) =>
    new Promise<SessionResponse>((resolve, reject) => {
      let seen = 0;
      const check = () => {
        for (; seen < received.length; seen++) {
          if (match(received[seen])) {
            waiting.delete(check);
            return resolve(received[seen]);
          }
        }
        if (over) {
          waiting.delete(check);
          reject(new Error('the session ended first'));
        }
      };
      waiting.add(check);
      check();
    });
  const send = (request: DeepPartial<SessionRequest>) => {
    const full = SessionRequest.fromPartial(request);
    call.write(full);
    return full.opId;
  };
  const answerTo = (opId: string) => next((r) => r.opId === opId && !r.renewed && !r.lost);
  return {
    call,
    received,
    send,
    op: (request) => answerTo(send({ ...request, opId: String(nextId++ + 1_000_000) })),
    next,
    answerTo,
    ended,
  };
}
