import { describe, expect, it } from 'vitest';
import { isLoopbackListen, protectedModeRefusal } from '../../src/cli/protected-mode';

describe('protected mode', () => {
  it('tells loopback listen addresses from the others', () => {
    for (const listen of [
      '127.0.0.1:50051',
      '127.1.2.3:1',
      'localhost:50051',
      'LOCALHOST:1',
      '[::1]:50051',
      '[::ffff:127.0.0.1]:1',
      'unix:/tmp/holdfast.sock',
    ]) {
      expect([listen, isLoopbackListen(listen)]).toEqual([listen, true]);
    }
    for (const listen of ['0.0.0.0:50051', '[::]:50051', ':50051', '10.0.0.7:50051', '[fe80::1]:1', 'holdfast.internal:50051', '128.0.0.1:1']) {
      expect([listen, isLoopbackListen(listen)]).toEqual([listen, false]);
    }
  });

  it('refuses a non-loopback address with neither TLS nor keys nor --insecure, and names what to add', () => {
    const open = { listen: '0.0.0.0:50051', tls: false, authConfigured: false, insecure: false };
    expect(protectedModeRefusal(open)).toMatch(/^protected mode: refusing to listen on 0\.0\.0\.0:50051.*--tls-cert.*API keys.*--insecure/);
    expect(protectedModeRefusal(open)).not.toMatch(/\n/);
    expect(protectedModeRefusal({ ...open, tls: true })).toBeUndefined();
    expect(protectedModeRefusal({ ...open, authConfigured: true })).toBeUndefined();
    expect(protectedModeRefusal({ ...open, insecure: true })).toBeUndefined();
    expect(protectedModeRefusal({ ...open, listen: '127.0.0.1:50051' })).toBeUndefined();
  });
});
