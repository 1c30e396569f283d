// Key building: one hash tag per lock, whatever the name holds.
import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { lockKeys, lockNameOfKey, scriptKeys } from '../../src/engine/keys';

describe('lockKeys', () => {
  it('puts every key of a lock under one hash tag, so one Cluster slot', () => {
    for (const name of ['orders/42', 'a{b}c', '}{', '{', '%7B', 'ünïcode ✓', 'x'.repeat(512)]) {
      const keys = lockKeys('hf', name);
      const all = [keys.holders, keys.queue, keys.data, keys.channel];
      expect(new Set(all.map((k) => calculateSlot(k))).size, name).toBe(1);
      expect(new Set(all).size).toBe(4);
    }
  });

  it('keeps names apart that differ only in characters it encodes', () => {
    const names = ['a{b', 'a%7Bb', 'a}b', 'a%7Db', 'a%b', 'a%25b'];
    expect(new Set(names.map((n) => lockKeys('hf', n).data)).size).toBe(names.length);
  });

  it('gives a script the first N keys in header order', () => {
    const keys = lockKeys('hf', 'n');
    expect(scriptKeys(keys, 3)).toEqual([keys.holders, keys.queue, keys.data]);
    expect(scriptKeys(keys, 4)).toEqual([keys.holders, keys.queue, keys.data, keys.channel]);
  });
});

describe('lockNameOfKey', () => {
  it('gives back the name of a holder or queue key, whatever the name holds', () => {
    for (const name of ['orders/42', 'a{b}c', '}{', '%7B', 'a*b?[c]\\', 'ünïcode ✓']) {
      const keys = lockKeys('hf', name);
      expect([lockNameOfKey('hf', keys.holders), lockNameOfKey('hf', keys.queue)]).toEqual([name, name]);
      expect([lockNameOfKey('hf', keys.data), lockNameOfKey('hf', keys.channel), lockNameOfKey('other', keys.holders)]).toEqual([null, null, null]);
    }
  });
});
