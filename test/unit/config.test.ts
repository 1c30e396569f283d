// The serve settings: one schema entry per option, and what commander alone would get wrong.
import { describe, expect, it } from 'vitest';
import { serveCommand } from '../../src/cli/serve';
import { envNameOf } from '../../src/config/env';
import { serveSettings } from '../../src/config/schema';

describe('serve settings', () => {
  const command = serveCommand();

  it('has one schema entry for every serve option, and no entry without an option', () => {
    const options = command.options.map((o) => o.attributeName()).sort();
    expect(Object.keys(serveSettings).sort()).toEqual(options);
  });

  it('gives every option but --print-config an environment variable', () => {
    const missing = command.options.filter((o) => !o.envVar && o.long !== '--print-config').map((o) => o.long);
    expect(missing).toEqual([]);
    const maxTtl = command.options.find((o) => o.long === '--max-ttl-ms')!;
    expect(maxTtl.envVar).toBe('HOLDFAST_MAX_TTL_MS');
    expect(envNameOf(maxTtl)).toBe('HOLDFAST_MAX_TTL_MS');
  });
});
