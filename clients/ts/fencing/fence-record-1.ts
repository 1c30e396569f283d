// clients/conformance/fence-record-1.lua, embedded so the SDK works installed alone (tsc copies
// no .lua files). test/fencing/script-copy.test.ts checks it is byte-identical to the original.
export const FENCE_RECORD_SCRIPT = `-- fence-record-1: the fencing guard's Redis store. Compares a request's fencing token with the
-- newest one recorded for its lock and records it when it is not older, in one step, so two
-- guards (or two requests) cannot both pass with tokens out of order.
-- Every client package ships a byte-identical copy; its tests check that it still is.
--
-- KEYS[1]  the lock's fence record, \`holdfast-fence:{<lock name>}\` (one slot on a Cluster)
-- ARGV[1]  the request's token: unsigned decimal, no leading zeros (up to 2^64-1, past Lua's
--          exact numbers, so tokens are compared as digit strings: by length, then by text)
-- ARGV[2]  how long the record outlives its last accepted request, in ms
-- Returns  { 1, newest } when accepted (token >= newest; newest is then the token),
--          { 0, newest } when refused (token < newest); newest as a decimal string.
local fenceKey = KEYS[1]
local token = ARGV[1]
local keepMs = tonumber(ARGV[2])

local newest = redis.call('GET', fenceKey)
local older = newest and (#token < #newest or (#token == #newest and token < newest))
if older then
  return { 0, newest }
end
if newest ~= token then
  redis.call('SET', fenceKey, token, 'PX', keepMs)
else
  redis.call('PEXPIRE', fenceKey, keepMs)
end
return { 1, token }
`;
