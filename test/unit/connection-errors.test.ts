// The SDK's address check and its wording of connection failures, on the exact strings grpc-js
// 1.14 gives (the e2e test connect-errors.test.ts meets them on real listeners).
import { describe, expect, it } from 'vitest';
import { checkAddress, explainConnectionFailure, InvalidAddressError } from '../../clients/ts/index';

const plaintext = { tls: false, clientCert: false };

describe('checkAddress', () => {
  it.each(['127.0.0.1:50051', 'localhost:1', '[::1]:65535', 'holdfast.internal:443', 'unix:/run/holdfast.sock', 'dns:///holdfast:50051'])(
    'accepts %j',
    (address) => {
      expect(checkAddress(address)).toBe(address);
    },
  );

  it.each(['127.0.0.1', 'localhost', '[::1]', '::1', 'h:0', 'h:65536', 'h:5x', 'grpc://h:1', ' h:1'])('refuses %j', (address) => {
    expect(() => checkAddress(address)).toThrow(InvalidAddressError);
  });
});

describe('explainConnectionFailure', () => {
  it('leaves statuses that came from a server as they are', () => {
    expect(explainConnectionFailure('grants resume in 61000 ms (failover quarantine)', 'h:1', plaintext)).toBeUndefined();
  });

  it('keeps grpc-js words it has no explanation for, without the timestamp and the empty resolution note', () => {
    const details = 'No connection established. Last error: Error: something new (2026-11-26T08:44:28.932Z). Resolution note: ';
    expect(explainConnectionFailure(details, 'h:1', plaintext)).toBe('cannot reach holdfast at h:1: Error: something new');
  });

  it('tells a refused connection from a closed one', () => {
    const refused = 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ';
    const closed = 'No connection established. Last error: Failed to connect (2026-11-26T08:44:56.402Z). Resolution note: ';
    expect(explainConnectionFailure(refused, 'h:1', plaintext)).toMatch(/connection refused/);
    expect(explainConnectionFailure(closed, 'h:1', plaintext)).toMatch(/does it want TLS/);
    expect(explainConnectionFailure(closed, 'h:1', { tls: true, clientCert: true })).toMatch(/does it trust this client certificate/);
  });
});
